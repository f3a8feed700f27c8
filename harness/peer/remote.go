package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/loadbench"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The layouts of data in a bucket that RemoteSweep compares on.
const (
	// ImageFolder is one object per image under class folders: the peer
	// GETs each sample in a map-style Dataset; ours GETs each too.
	ImageFolder = "imagefolder"
	// Shards is WebDataset tar shards: the peer streams each shard with
	// one GET (an IterableDataset); ours GETs each member's byte range.
	Shards = "shards"
)

// RemoteLayouts lists the layouts in the order of a report.
var RemoteLayouts = []string{ImageFolder, Shards}

// RemoteScript is the boto3 peer.
const RemoteScript = "peers/torch/s3.py"

// RemoteTarget is issue 34's goal for data from a bucket: our loader with
// the fast transforms at least 3× the boto3 peer's samples/s at the same
// workers, on the same server and link.
var RemoteTarget = Target{Impl: Fast, Min: 3}

// ReachedShare is the share of the link's ceiling at which a run counts as
// having reached the link's limit.
const ReachedShare = 0.9

// RemoteMeasurement is one run of one implementation on one layout.
type RemoteMeasurement struct {
	Layout string
	Measurement
}

// BenchName is e.g. "BenchmarkPeerRemote/layout=shards/impl=torch/workers=4".
func (m RemoteMeasurement) BenchName() string {
	return fmt.Sprintf("BenchmarkPeerRemote/layout=%s/impl=%s/workers=%d", m.Layout, m.Impl, m.Workers)
}

// Benchmark is the run in benchmark format, in loadbench's units.
func (m RemoteMeasurement) Benchmark() *benchfmt.Result {
	return loadbench.Result(m.BenchName(), m.Batches, m.TTFB, m.SamplesPerSec, -1, m.CPU)
}

// RemoteConfig is one comparison on data in a bucket: the same objects on
// the same server, reached through the same link, by both sides.
type RemoteConfig struct {
	// Peer runs RemoteScript; its Env points it at the link
	// (AWS_ENDPOINT_URL) with the server's credentials.
	Peer Peer
	// Settings are the pipeline's; Bucket is how ours reaches the link,
	// Link the link's settings (recorded), Decoder our JPEG decoder.
	// Settings.Data is set per layout from Data.
	Settings Settings
	// Data is each layout's s3:// URL.
	Data    map[string]string
	Layouts []string
	Workers []int
	Impls   []string // of Naive, Fast, Torch; nil means Fast and Torch
	Count   int      // rounds; 0 means 1
}

func (c RemoteConfig) impls() []string {
	if c.Impls == nil {
		return []string{Fast, Torch}
	}
	return c.Impls
}

// Validate reports the first problem with c.
func (c RemoteConfig) Validate() error {
	if len(c.Layouts) == 0 || len(c.Workers) == 0 || len(c.impls()) == 0 {
		return errors.New("remote: no layouts, worker counts or implementations")
	}
	for _, l := range c.Layouts {
		if !slices.Contains(RemoteLayouts, l) {
			return fmt.Errorf("remote: unknown layout %q (want %s)", l, strings.Join(RemoteLayouts, " or "))
		}
		if c.Data[l] == "" {
			return fmt.Errorf("remote: no bucket URL for layout %s", l)
		}
	}
	for _, impl := range c.impls() {
		if !slices.Contains(Impls, impl) {
			return fmt.Errorf("remote: unknown implementation %q", impl)
		}
	}
	for _, w := range c.Workers {
		if w <= 0 {
			return fmt.Errorf("remote: workers %d must be positive", w)
		}
	}
	if c.Settings.Batches < 2 {
		return fmt.Errorf("remote: batches %d: want at least 2", c.Settings.Batches)
	}
	return nil
}

// RemoteResult is what RemoteSweep measured, in the order it ran, and the
// configuration lines the peer printed first (its versions).
type RemoteResult struct {
	Measurements []RemoteMeasurement
	PeerConfig   []resultfile.Config
}

// RemoteSweep measures every implementation on every layout at every
// worker count, Count times, alternating as Sweep does, by layout and
// worker count. Ours is loadbench.Measure of
// the goroutine loader over the layout's URL (Settings.Bucket: through the
// link); the peer is RunRemote. each, if not nil, sees every run. On error
// the runs so far are returned with it.
func RemoteSweep(ctx context.Context, c RemoteConfig, each func(RemoteMeasurement)) (RemoteResult, error) {
	var res RemoteResult
	if err := c.Validate(); err != nil {
		return res, err
	}
	type point struct {
		layout string
		w      int
	}
	var points []point
	for _, layout := range c.Layouts {
		for _, w := range c.Workers {
			points = append(points, point{layout, w})
		}
	}
	err := alternate(ctx, c.Count, points, c.impls(), func(round int, p point, impl string) error {
		m, err := c.measure(ctx, &res, p.layout, impl, p.w)
		if err != nil {
			return fmt.Errorf("round %d, %s, %s, workers=%d: %w", round+1, p.layout, impl, p.w, err)
		}
		res.Measurements = append(res.Measurements, m)
		if each != nil {
			each(m)
		}
		return nil
	})
	return res, err
}

func (c RemoteConfig) measure(ctx context.Context, res *RemoteResult, layout, impl string, w int) (RemoteMeasurement, error) {
	s := c.Settings
	s.Data = c.Data[layout]
	if impl == Torch {
		out, err := c.Peer.RunRemote(ctx, s, layout, w)
		if err != nil {
			return RemoteMeasurement{}, err
		}
		peerConfig(&res.PeerConfig, out.Config)
		return out.Results[0], nil
	}
	m, err := measureOurs(ctx, s, impl, w)
	return RemoteMeasurement{Layout: layout, Measurement: m}, err
}

// RemoteArgs is RemoteScript's argv (after its path) for s on layout at w
// workers; s.Data is the layout's s3:// URL.
func (s Settings) RemoteArgs(layout string, w int) []string {
	return append([]string{"--data", s.Data, "--layout", layout}, s.args("--batches", s.Batches, strconv.Itoa(w))...)
}

// RemoteOutput is what RemoteScript printed.
type RemoteOutput struct {
	Config  []resultfile.Config
	Results []RemoteMeasurement
}

// RunRemote runs RemoteScript on layout at w workers and checks it printed
// that one run, with at least two batches (a stream's count is the
// dataset's, not Settings.Batches).
func (p Peer) RunRemote(ctx context.Context, s Settings, layout string, w int) (RemoteOutput, error) {
	what := fmt.Sprintf("%s, workers=%d", layout, w)
	out, err := p.exec(ctx, []int{w}, s.RemoteArgs(layout, w)...)
	if re := (*RunError)(nil); errors.As(err, &re) {
		re.What = what
	}
	if err != nil {
		return RemoteOutput{}, err
	}
	o, err := ParseRemote(strings.NewReader(string(out)), fmt.Sprintf("%s (%s)", p.Script, what))
	if err != nil {
		return RemoteOutput{}, err
	}
	if len(o.Results) != 1 || o.Results[0].Layout != layout || o.Results[0].Impl != Torch || o.Results[0].Workers != w {
		return RemoteOutput{}, fmt.Errorf("peer %s (%s): printed %d results, want the one of torch on %s at %d workers", p.Script, what, len(o.Results), layout, w)
	}
	return o, nil
}

// ParseRemote reads RemoteScript's output (or a results file RemoteSweep's
// runs were written to): configuration lines and
// BenchmarkPeerRemote/layout=<l>/impl=<impl>/workers=<n> lines, checked
// as Parse checks BenchmarkPeer lines.
func ParseRemote(r io.Reader, name string) (RemoteOutput, error) {
	config, ms, err := parseScript(r, name, RemoteLayout, RemoteMeasurementOf)
	return RemoteOutput{Config: config, Results: ms}, err
}

// RemoteLayout is the names of the remote comparison's records,
// BenchmarkPeerRemote/layout=<l>/impl=<impl>/workers=<n>: the script's
// lines (ParseRemote) and a results file's (package workloads'
// PeerRemoteCodec is built from it) alike.
var RemoteLayout = resultfile.Layout{Owner: "PeerRemote", Keys: map[string][]string{"PeerRemote": {"layout", "impl", "workers"}}}

// RemoteMeasurementOf is the run of one BenchmarkPeerRemote record whose
// name n gives (RemoteLayout): its layout one of RemoteLayouts, the rest
// checked as MeasurementOf checks a BenchmarkPeer record's.
func RemoteMeasurementOf(n resultfile.Name, r *benchfmt.Result) (RemoteMeasurement, error) {
	m, err := MeasurementOf(n, r)
	if err == nil && !slices.Contains(RemoteLayouts, n.Keys["layout"]) {
		full := resultfile.FullName(r)
		err = fmt.Errorf("%s: unknown layout %q (want one of %s)", full, n.Keys["layout"], strings.Join(RemoteLayouts, ", "))
	}
	return RemoteMeasurement{Layout: n.Keys["layout"], Measurement: m}, err
}

// RemoteRow is one implementation at one worker count on one layout: the
// medians (Row, with the ratio to the peer's) and the link's ceiling.
type RemoteRow struct {
	Layout string
	Row
	// Ceiling is the most samples/s the link lets through for this
	// layout (its bandwidth over the bytes a sample costs, its request
	// rate over the requests a sample costs); +Inf without a limit.
	Ceiling float64
}

// Share is samples/s over the ceiling (0 without one).
func (r RemoteRow) Share() float64 {
	if math.IsInf(r.Ceiling, 1) || r.Ceiling <= 0 {
		return 0
	}
	return r.SamplesPerSec / r.Ceiling
}

// Met says whether the row meets RemoteTarget; ok is false where it has
// none or the peer was not measured.
func (r RemoteRow) Met() (met, ok bool) {
	if r.Impl != RemoteTarget.Impl || r.Speedup == 0 {
		return false, false
	}
	return r.Speedup >= RemoteTarget.Min, true
}

// LayoutCost is what a sample of a layout costs on the link: bytes moved
// and GET requests.
type LayoutCost struct {
	BytesPerSample    float64
	RequestsPerSample float64
}

// Ceiling is the link's most samples/s for a layout of this cost.
func (lc LayoutCost) Ceiling(l link.Config) float64 {
	c := math.Inf(1)
	if l.Bandwidth > 0 && lc.BytesPerSample > 0 {
		c = min(c, float64(l.Bandwidth)/lc.BytesPerSample)
	}
	if l.RequestRate > 0 && lc.RequestsPerSample > 0 {
		c = min(c, l.RequestRate/lc.RequestsPerSample)
	}
	return c
}

// SummarizeRemote gives the rows of every layout (in RemoteLayouts'
// order), each as Summarize groups and divides them, with the layout's
// ceiling on link l.
func SummarizeRemote(ms []RemoteMeasurement, costs map[string]LayoutCost, l link.Config) []RemoteRow {
	var out []RemoteRow
	for _, layout := range RemoteLayouts {
		var sub []Measurement
		for _, m := range ms {
			if m.Layout == layout {
				sub = append(sub, m.Measurement)
			}
		}
		for _, r := range Summarize(sub) {
			out = append(out, RemoteRow{Layout: layout, Row: r, Ceiling: costs[layout].Ceiling(l)})
		}
	}
	return out
}

// Reached is, for one layout and implementation, the fewest workers whose
// median reaches ReachedShare of the link's ceiling, and false if none did.
func Reached(rows []RemoteRow, layout, impl string) (int, bool) {
	for _, r := range rows {
		if r.Layout == layout && r.Impl == impl && r.Share() >= ReachedShare {
			return r.Workers, true
		}
	}
	return 0, false
}

package workloads

import (
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// nodeRanks are two ranks' results: rank 0 with every figure (CPU,
// run-queue delay, bytes and requests fetched), rank 1 with none of the
// optional ones.
func nodeRanks() []node.RankResult {
	return []node.RankResult{
		{Rank: 0, Steps: 60, Batch: 8, Wall: 2401934825 * time.Nanosecond, Compute: 2400000000, InputWait: 728673, Barrier: 1065177,
			CPU: 721257000, RunDelay: 50592000, HasCPU: true, HasRunDelay: true, Fetched: 123456789, Requests: 480},
		{Rank: 1, Steps: 60, Batch: 8, Wall: 2400001234, Compute: 2399000000, InputWait: 0, Barrier: 0},
	}
}

// TestNodeCodec: the records a node run makes (node.Records,
// node.PartialRecord, node.PeerRecords) decode as its figures, which
// encode as those records again, and a node's outcome, encoded then
// decoded, is itself (but for what the records do not hold: each run's
// Outcome, Others and Err).
func TestNodeCodec(t *testing.T) {
	p := node.Point{Accelerators: 2, Level: level.None}
	h := node.Point{Accelerators: 1, Level: level.Host}
	full := node.Outcome{Ranks: nodeRanks(), Released: 122, Elapsed: 5 * time.Second, Skew: 1220000}
	plain := node.Outcome{Ranks: nodeRanks()[1:]}
	plain.Ranks[0].Rank = 0
	zero := node.Outcome{Ranks: []node.RankResult{{Rank: 0, Steps: 0, Batch: 8}}}
	stalled := full
	stalled.Stall = 1500 * time.Millisecond
	for _, tc := range []struct {
		name string
		p    node.Point
		peer bool
		recs []*benchfmt.Result
	}{
		{"every figure, a link", p, false, node.Records(p, full, node.Others{Cores: 0.25, Threads: 0}, 2e8)},
		{"no link", p, false, node.Records(p, full, node.Others{Cores: 0, Threads: 3.5}, 0)},
		{"a stall", p, false, node.Records(p, stalled, node.Others{Cores: 0, Threads: 3.5}, 0)},
		{"others unknown, no CPU", h, false, node.Records(h, plain, node.Others{Cores: -1, Threads: -1}, 0)},
		{"no time measured: no node record", h, false, node.Records(h, zero, node.Others{Cores: 1, Threads: 1}, 0)},
		{"partial", p, false, []*benchfmt.Result{node.PartialRecord(p, node.Outcome{Released: 7, Elapsed: 3 * time.Second}, 8)}},
		{"partial, nothing released", p, false, []*benchfmt.Result{node.PartialRecord(p, node.Outcome{}, 8)}},
		{"the PyTorch peer", p, true, node.PeerRecords(p, full)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := nodeRunOf(tc.p, tc.peer, tc.recs)
			if err != nil {
				t.Fatal(err)
			}
			if got := NodeCodec.Encode(NodeOutcome{Runs: []NodeRun{r}}); !reflect.DeepEqual(got, tc.recs) {
				t.Errorf("run %+v encodes as\n%v\nits records are\n%v", r, got, tc.recs)
			}
			roundTrip(t, NodeCodec, NodeOutcome{Runs: []NodeRun{r}})
		})
	}
	// A sweep: runs of every kind, one after another, and of another
	// GOMAXPROCS.
	var o NodeOutcome
	for _, run := range []struct {
		p    node.Point
		peer bool
		recs []*benchfmt.Result
	}{
		{h, false, node.Records(h, plain, node.Others{Cores: -1, Threads: 2}, 0)},
		{h, false, node.Records(h, plain, node.Others{Cores: -1, Threads: 2}, 0)},
		{h, false, node.Records(h, zero, node.Others{}, 0)},
		{h, true, node.PeerRecords(h, plain)},
		{p, false, node.Records(p, full, node.Others{Cores: 0.5, Threads: 1}, 1e9)},
		{p, false, []*benchfmt.Result{node.PartialRecord(p, full, 8)}},
		{p, true, node.PeerRecords(p, full)},
	} {
		r, err := nodeRunOf(run.p, run.peer, run.recs)
		if err != nil {
			t.Fatal(err)
		}
		o.Runs = append(o.Runs, r)
	}
	o.Runs[1].Procs = 1
	o.Runs[4].Procs = 16
	roundTrip(t, NodeCodec, o)
}

// TestNodeCodecCommittedFiles: the committed node result files decode,
// and their runs encode as the files' records again.
func TestNodeCodecCommittedFiles(t *testing.T) {
	for _, name := range []string{"node-bca00af.txt", "node-peer-346df48.txt"} {
		t.Run(name, func(t *testing.T) {
			o := reencodes(t, NodeCodec, filepath.Join("..", "results", name))
			if len(o.Runs) == 0 {
				t.Fatal("no runs")
			}
		})
	}
}

// reencodes checks that the records of the committed result file path
// decode with c, and that what they decode as encodes as the file's
// records again (through a file, read as the file is), and returns it.
func reencodes[R any](t *testing.T, c Codec[R], path string) R {
	t.Helper()
	recs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	back := throughFile(t, c.Encode(o))
	if len(back) != len(recs) {
		t.Fatalf("%d records encoded, the file has %d", len(back), len(recs))
	}
	for i := range recs {
		if !reflect.DeepEqual(back[i].Name, recs[i].Name) || back[i].Iters != recs[i].Iters || !reflect.DeepEqual(back[i].Values, recs[i].Values) {
			t.Errorf("record %d encodes as\n%v\nthe file's is\n%v", i, back[i], recs[i])
		}
	}
	return o
}

// TestNodeMeasure: the runs Measure makes of a node of this test
// binary's ranks encode as node.Records of their outcome, and as Run's
// records do, and each is passed to MeasureEach's callback as made.
func TestNodeMeasure(t *testing.T) {
	n := QuickNode()
	n.Accelerators, n.Levels = []int{2}, []level.Level{level.None}
	exe, args, env := node.SelfRank()
	e := Env{Rank: procloader.Options{Exe: exe, Args: args, Env: env}}
	var each []NodeRun
	o, err := n.MeasureEach(t.Context(), e, func(r NodeRun) error { each = append(each, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Runs) != 1 || !reflect.DeepEqual(each, o.Runs) {
		t.Fatalf("measured %d runs, passed %d to each", len(o.Runs), len(each))
	}
	r := o.Runs[0]
	if r.Procs != runtime.GOMAXPROCS(0) || len(r.Ranks) != 2 || r.Node == nil || r.Err != nil {
		t.Fatalf("run %+v: want 2 ranks and the node's figures at GOMAXPROCS %d", r, runtime.GOMAXPROCS(0))
	}
	if want := node.Records(r.Point, r.Outcome, r.Others, n.LinkBandwidth); !reflect.DeepEqual(NodeCodec.Encode(o), want) {
		t.Errorf("the run encodes as\n%v\nnode.Records of its outcome are\n%v", NodeCodec.Encode(o), want)
	}
	var streamed []*benchfmt.Result
	e.Result = func(r *benchfmt.Result) error { streamed = append(streamed, r); return nil }
	recs, err := n.Run(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || !reflect.DeepEqual(recs, streamed) {
		t.Errorf("Run returned %d records and passed %d to Result, want its 2 ranks' and the node's", len(recs), len(streamed))
	}
	// An error from the callback stops the sweep.
	stop := errors.New("stop")
	if _, err := n.MeasureEach(t.Context(), e, func(NodeRun) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("MeasureEach with a failing callback: %v, want %v", err, stop)
	}
}

// TestNodeWhatIfCodecCommittedFiles: the committed node what-if files
// decode through NodeWhatIfCodec (the profile's runs, the verify runs,
// a prediction of each count), and encode as the files' records again.
func TestNodeWhatIfCodecCommittedFiles(t *testing.T) {
	for _, name := range []string{"node-whatif-bca00af.txt", "node-whatif-fast-bca00af.txt"} {
		t.Run(name, func(t *testing.T) {
			o := reencodes(t, NodeWhatIfCodec, filepath.Join("..", "results", name))
			if len(o.Profile.Runs) == 0 || len(o.Verify.Runs) == 0 || len(o.Predictions) != 4 {
				t.Fatalf("%d profile runs, %d verify runs, %d predictions; want some, some and 4", len(o.Profile.Runs), len(o.Verify.Runs), len(o.Predictions))
			}
		})
	}
}

// TestNodeWhatIfExperiment: whatif --accelerators is a registered,
// typed experiment whose codec alone reads its files: a node's file and
// its own do not decode through each other's codec, and its outcome
// read back from a committed file reports (Report) what that file's run
// printed, from the file's configuration lines.
func TestNodeWhatIfExperiment(t *testing.T) {
	e, err := Lookup("NodeWhatIf")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(Typed[NodeWhatIfOutcome]); !ok {
		t.Fatalf("NodeWhatIf is a %T, not Typed[NodeWhatIfOutcome]", e)
	}
	own, err := resultfile.Read(filepath.Join("..", "results", "node-whatif-bca00af.txt"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := resultfile.Read(filepath.Join("..", "results", "node-bca00af.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NodeWhatIfCodec.Decode(other); err == nil {
		t.Error("a node's file decodes through NodeWhatIfCodec")
	}
	if _, err := NodeCodec.Decode(own); err == nil {
		t.Error("a node what-if's file decodes through NodeCodec")
	}
	o, err := NodeWhatIfCodec.Decode(own)
	if err != nil {
		t.Fatal(err)
	}
	if !o.MinAUKnown || o.Model.Command == "" || len(o.Model.Accelerators) != 4 || len(o.Model.Measured) == 0 || o.Model.Profile.MemoryPerRank <= 0 {
		t.Fatalf("model read back %+v (min AU known %v): want the file's command, 4 counts, the verify rows and the memory", o.Model, o.MinAUKnown)
	}
	var b strings.Builder
	if err := (NodeWhatIf{}).Report(o, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"accelerators", "predicted"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report %q lacks %q", b.String(), want)
		}
	}
	// Records alone (no file's lines) have no model to report.
	bare, err := NodeWhatIfCodec.Decode(NodeWhatIfCodec.Encode(o))
	if err != nil {
		t.Fatal(err)
	}
	if err := (NodeWhatIf{}).Report(bare, io.Discard); err == nil {
		t.Error("Report of records without their file's lines: no error")
	}
}

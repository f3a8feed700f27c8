package workloads

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/spdlcache"
)

var updatePeers = flag.Bool("update-peers", false, "rewrite harness/realpeer/testdata's reports")

// readRealPeersErr is the report of a `peer --peers --out` file, its
// records decoded through RealPeerCodec (peer --from's way).
func readRealPeersErr(path string) (realpeer.Report, error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return realpeer.Report{}, err
	}
	o, err := RealPeerCodec.Decode(recs)
	if err != nil {
		return realpeer.Report{}, err
	}
	return realpeer.ReportOf(path, o.Config, o.Runs, o.Limits)
}

// readRealPeers is readRealPeersErr, failing the test on an error.
func readRealPeers(t *testing.T, path string) (realpeer.Report, error) {
	t.Helper()
	return readRealPeersErr(path)
}

// realPeerGolden compares got with harness/realpeer/testdata/name, or
// rewrites it with -update-peers.
func realPeerGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "harness", "realpeer", "testdata", name)
	if *updatePeers {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update-peers rewrites it):\n%s", name, got)
	}
}

// TestRealPeerCodecReport: a results file with two rounds and a missing run
// reads back as its runs, each in its round (dali's round-1 run missing,
// so its record is round 2), and its report is the golden one.
func TestRealPeerCodecReport(t *testing.T) {
	r, err := readRealPeers(t, "../harness/realpeer/testdata/peers.txt")
	if err != nil {
		t.Fatal(err)
	}
	var rounds []string
	for _, m := range r.Runs {
		rounds = append(rounds, m.Peer+":"+string(rune('0'+m.Round)))
	}
	if got, want := strings.Join(rounds, " "), "ours:1 torch2:1 torch2:2 dali:2 ours:2 dali:1"; got != want {
		t.Errorf("runs' rounds %s, want %s", got, want)
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	realPeerGolden(t, "peers.md", b.Bytes())
}

func TestRealPeerNewReportRefuses(t *testing.T) {
	full, err := readRealPeers(t, "../harness/realpeer/testdata/peers.txt")
	if err != nil {
		t.Fatal(err)
	}
	without := func(key string) realpeer.Report {
		var r realpeer.Report
		for _, c := range full.Config {
			if c.Key != key {
				r.Config = append(r.Config, c)
			}
		}
		return r
	}
	for _, key := range realpeer.ReportKeys {
		if _, err := realpeer.NewReport(without(key).Config, full.Runs, nil, "f.txt"); err == nil || !strings.Contains(err.Error(), "f.txt: no "+key+" line") {
			t.Errorf("without %s: %v, want the error naming the file and the key", key, err)
		}
	}
	bad := append(without("peers").Config, full.Config[0])
	bad[len(bad)-1].Key, bad[len(bad)-1].Value = "peers", "torch2,ray"
	if _, err := realpeer.NewReport(bad, full.Runs, nil, "f.txt"); err == nil || !strings.Contains(err.Error(), `peers line names "ray"`) {
		t.Errorf("a peers line with an unknown peer: %v", err)
	}
}

// TestRealPeerCodecLimit: a results file with the limit's records rebuilds
// the share of the limit (ours: 350 samples/s × 2804736 B ÷ the median
// copy bandwidth 11.5 GB/s) and where ours' time goes; its report is the
// golden one.
func TestRealPeerCodecLimit(t *testing.T) {
	r, err := readRealPeers(t, "../harness/realpeer/testdata/peers-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Limits) != 2 || r.SampleBytes != 2804736 || r.CopyBandwidth(2) != 11.5e9 || r.CopyBandwidth(1) != 0 {
		t.Fatalf("limits %+v, bytes %d, bandwidth %g", r.Limits, r.SampleBytes, r.CopyBandwidth(2))
	}
	for _, row := range r.Rows {
		want := -1.0
		if row.Runs > 0 {
			want = row.SamplesPerSec * 2804736 / 11.5e9
		}
		if math.Abs(row.Share-want) > 1e-12 {
			t.Errorf("%s: share %v, want %v", row.Peer, row.Share, want)
		}
	}
	if st := r.StageTimes(2); len(st) != 5 || st[1].Stage != "decode" || st[1].PerSample != 2500*time.Microsecond {
		t.Errorf("stage times %+v, want five, decode's median 2.5 ms", st)
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	realPeerGolden(t, "peers-limit.md", b.Bytes())
}

// TestRealPeerCodecLimitRefuses: a bad limit record or bytes line names the
// file and what is wrong.
func TestRealPeerCodecLimitRefuses(t *testing.T) {
	good, err := os.ReadFile("../harness/realpeer/testdata/peers-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"BenchmarkRealPeerLimit/workers=2 8 1.2e+10 copy-B/s", "BenchmarkRealPeerLimit/workers=0 8 1.2e+10 copy-B/s", "workers \"0\": want a positive count"},
		{"BenchmarkRealPeerLimit/workers=2 8 1.2e+10 copy-B/s", "BenchmarkRealPeerLimit/mode=x 8 1.2e+10 copy-B/s", "a record of RealPeer without its key workers"},
		{"8 1.2e+10 copy-B/s", "8 1.2e+10 other-B/s", "no copy-B/s value"},
		{"8 1.2e+10 copy-B/s", "8 0 copy-B/s", "copy-B/s must be positive"},
		{"8 1.2e+10 copy-B/s 40000 fetch-ns/sample", "8 1.2e+10 copy-B/s -4 fetch-ns/sample", "fetch-ns/sample -4 must be finite and not negative"},
		{"limit-bytes-per-sample: 2804736", "limit-bytes-per-sample: many", `limit-bytes-per-sample "many" is not a positive whole number`},
	} {
		path := filepath.Join(t.TempDir(), "r.txt")
		if err := os.WriteFile(path, []byte(strings.Replace(string(good), tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readRealPeersErr(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s → %s: %v, want an error naming %s and %q", tc.old, tc.new, err, path, tc.want)
		}
	}
}

// TestRealPeerPlotRebuilds: the plot is drawn from the report alone, so drawing
// it twice (a run, then --from) gives the same bytes; both formats.
func TestRealPeerPlotRebuilds(t *testing.T) {
	r, err := readRealPeers(t, "../harness/realpeer/testdata/peers-limit.txt")
	if err != nil {
		t.Fatal(err)
	}
	var files [2][]string
	for i := range files {
		paths, err := r.Plot(filepath.Join(t.TempDir(), "peers"))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 2 || !strings.HasSuffix(paths[0], ".png") || !strings.HasSuffix(paths[1], ".svg") {
			t.Fatalf("paths %v", paths)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				t.Fatalf("%s: %v, %d bytes", p, err, len(b))
			}
			files[i] = append(files[i], string(b))
		}
	}
	for k := range files[0] {
		if files[0][k] != files[1][k] {
			t.Errorf("plot file %d differs between two draws of one report", k)
		}
	}
	if !strings.Contains(files[0][1], "torch2") || !strings.Contains(files[0][1], "ours") {
		t.Error("the SVG names neither torch2 nor ours")
	}
	if _, err := (realpeer.Report{}).Plot(filepath.Join(t.TempDir(), "empty")); err == nil {
		t.Error("a report with no runs: no error")
	}
}

// TestSPDLCacheCodecReport: the side-by-side's results file
// (harness/spdlcache's golden) decodes through SPDLCacheCodec into its
// runs, each in its round with SPDL's round-2 run missing, and its
// report is the golden one, as peer --from rebuilds it.
func TestSPDLCacheCodecReport(t *testing.T) {
	recs, err := resultfile.Read("../harness/spdlcache/testdata/results.txt")
	if err != nil {
		t.Fatal(err)
	}
	o, err := SPDLCacheCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	var rounds []string
	for _, r := range o.Runs {
		rounds = append(rounds, r.Side+":"+string(rune('0'+r.Round)))
	}
	if got, want := strings.Join(rounds, " "), "ours:1 spdl-cache:1 ours:2 ours:3 spdl-cache:3 spdl-cache:2"; got != want {
		t.Errorf("runs' rounds %s, want %s", got, want)
	}
	if back := SPDLCacheCodec.Encode(o); len(back) != len(recs) {
		t.Errorf("%d records encoded back, want %d", len(back), len(recs))
	}
	rep := spdlcache.NewReport(o.Config, o.Runs)
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"report.txt", func(b *bytes.Buffer) error { return rep.WriteText(b) }},
		{"report.md", func(b *bytes.Buffer) error { return rep.WriteMarkdown(b) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("../harness/spdlcache/testdata/" + f.name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs:\n%s", f.name, b.Bytes())
		}
	}
}

// TestSPDLCacheCodecRefuses: a record that is not the side-by-side's, or
// whose figures do not hold together, is refused with its line.
func TestSPDLCacheCodecRefuses(t *testing.T) {
	const head = "script-command: x\n\n"
	for _, tc := range []struct{ name, line, err string }{
		{"other benchmark", "BenchmarkRealPeer/peer=ours/workers=2 70 1 step-ns 1 cached-step-ns 0 headspace-%", "not a record of RealPeerHeadspace"},
		{"key more", "BenchmarkRealPeerHeadspace/peer=ours/workers=2/x=1 70 100 step-ns 50 cached-step-ns 50 headspace-%", "part of its name more (/x=1)"},
		{"unknown side", "BenchmarkRealPeerHeadspace/peer=dali/workers=2 70 100 step-ns 50 cached-step-ns 50 headspace-%", `peer "dali"`},
		{"bad workers", "BenchmarkRealPeerHeadspace/peer=ours/workers=two 70 100 step-ns 50 cached-step-ns 50 headspace-%", "want a count"},
		{"edited share", "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 100 step-ns 50 cached-step-ns 60 headspace-%", "its step times give 50"},
		{"no cached step", "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 100 step-ns 50 headspace-%", "no value in cached-step-ns"},
		{"zero step", "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 0 step-ns 0 cached-step-ns NaN headspace-%", "finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _, err := resultfile.Parse(strings.NewReader(head+tc.line+"\n"), "r.txt")
			if err != nil {
				t.Fatal(err)
			}
			_, err = SPDLCacheCodec.Decode(recs)
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "r.txt:3") {
				t.Errorf("err %v, want %q at r.txt:3", err, tc.err)
			}
		})
	}
}

// FuzzSPDLCacheCodec: whatever a file holds, what SPDLCacheCodec accepts
// is runs with a positive step and a round, whose report writes.
func FuzzSPDLCacheCodec(f *testing.F) {
	if b, err := os.ReadFile("../harness/spdlcache/testdata/results.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("missing-ours-r1: x\nBenchmarkRealPeerHeadspace/peer=spdl-cache/workers=1 9 5 step-ns 5 cached-step-ns 0 headspace-%\n")
	f.Fuzz(func(t *testing.T, in string) {
		recs, _, err := resultfile.Parse(strings.NewReader(in), "f")
		if err != nil || len(recs) == 0 {
			return
		}
		o, err := SPDLCacheCodec.Decode(recs)
		if err != nil {
			return
		}
		for _, r := range o.Runs {
			if r.Missing == "" && (r.Before <= 0 || r.Round < 1) {
				t.Fatalf("accepted %+v", r)
			}
		}
		var b bytes.Buffer
		if err := spdlcache.NewReport(o.Config, o.Runs).WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
	})
}

package peer_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"

	"github.com/headspace-bench/headspace/harness/machine"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func sampleReport() peer.Report {
	ms := []peer.Measurement{
		run("naive", 1, 230.4, 1100*time.Millisecond),
		run("fast", 1, 1250, 210*time.Millisecond),
		run("torch", 1, 115.2, 2250*time.Millisecond),
		run("naive", 2, 300, 800*time.Millisecond),
		run("fast", 2, 1900, 150*time.Millisecond),
		run("torch", 2, 189, 2750*time.Millisecond),
	}
	return peer.Report{
		Machine: machine.Machine{CPU: "Intel(R) Xeon(R) CPU @ 2.20GHz", Cores: 2, Distro: "Debian GNU/Linux 12 (bookworm), linux 6.1.0", Go: "go1.26.0", Commit: "be7788b"},
		PeerConfig: []resultfile.Config{
			{Key: "python", Value: "3.11.2"}, {Key: "torch", Value: "1.13.0a0"}, {Key: "torchvision", Value: "0.14.1a0"},
			{Key: "numpy", Value: "1.24.2"}, {Key: "scipy", Value: "1.10.1"}, {Key: "pillow", Value: "9.4.0"},
			{Key: "torch-threads", Value: "1"}, {Key: "start-method", Value: "fork"}, {Key: "prefetch-factor", Value: "2"},
		},
		Command:  "bin/headspace peer --workers 1,2 --out results/peer-emulated.txt",
		Settings: peer.DefaultSettings(),
		Count:    1,
		Rows:     peer.Summarize(ms),
		Figures: []peer.Figure{
			{Alt: "samples/s against workers", Path: "figures/peer-throughput.png"},
			{Alt: "time to first batch against workers", Path: "figures/peer-ttfb.png"},
		},
	}
}

func TestWriteMarkdownGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := peer.WriteMarkdown(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md.golden", buf.Bytes())
}

func TestWriteMarkdownWithoutTorch(t *testing.T) {
	r := sampleReport()
	r.PeerConfig, r.Figures, r.Count = nil, nil, 3
	r.Rows = peer.Summarize([]peer.Measurement{run("fast", 1, 1000, time.Second)})
	var buf bytes.Buffer
	if err := peer.WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"torch unknown", "3 rounds", "median of 3 runs", "No target could be judged", "| 1 | fast | 1000.0 | 1.000 | 1.00 | — | — | ≥ 10× | — |"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "## Figures") {
		t.Errorf("report has a Figures section with no figures")
	}
}

// A report of data on disk says which data both sides read and which
// decoder ours used, not "random raw images".
func TestWriteMarkdownOnDisk(t *testing.T) {
	r := sampleReport()
	r.Settings.Data, r.Settings.Decoder = "/tmp/natural-jpeg", "turbojpeg"
	var buf bytes.Buffer
	if err := peer.WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	if want := "read from the dataset on disk `/tmp/natural-jpeg` by both sides (ours decoding JPEG with `turbojpeg`, the peer with PIL)"; !strings.Contains(buf.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, buf.String())
	}
	if strings.Contains(buf.String(), "random raw images") {
		t.Errorf("a report of data on disk says random raw images")
	}
}

// file is a sweep's result file content as the commands make it:
// peer.FileConfig of config and the peer's lines, and each run's record.
func file[M interface{ Benchmark() *benchfmt.Result }](config, peerConfig []resultfile.Config, runs []M) ([]resultfile.Config, []*benchfmt.Result) {
	var rs []*benchfmt.Result
	for _, m := range runs {
		rs = append(rs, m.Benchmark())
	}
	return peer.FileConfig(config, peerConfig), rs
}

// write returns a function that writes a result file at path of the
// settings and records it is given, as the commands do (package driver):
// write(t, path)(file(config, res.PeerConfig, res.Measurements)).
func write(t *testing.T, path string) func([]resultfile.Config, []*benchfmt.Result) {
	return func(settings []resultfile.Config, records []*benchfmt.Result) {
		t.Helper()
		job := driver.Job{Settings: func() []resultfile.Config { return settings },
			Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) { return records, nil }}
		if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecords: a sweep's result file holds every run's record and the
// settings, the peer's lines where the settings lack their key.
func TestRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peer.txt")
	res := peer.Result{
		Measurements: []peer.Measurement{run("naive", 1, 230, time.Second), run("torch", 1, 115, 2*time.Second)},
		PeerConfig:   []resultfile.Config{{Key: "torch", Value: "1.13.0a0"}, {Key: "batch", Value: "999"}},
	}
	config := append([]resultfile.Config{{Key: "commit", Value: "abc1234"}}, peer.DefaultSettings().Config()...)
	write(t, path)(file(config, res.PeerConfig, res.Measurements))
	rs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || string(rs[0].Name) != "Peer/impl=naive/workers=1" || string(rs[1].Name) != "Peer/impl=torch/workers=1" {
		t.Fatalf("read back %d results: %v", len(rs), rs)
	}
	if got := rs[1].GetConfig("torch"); got != "1.13.0a0" {
		t.Errorf("torch config %q, want the peer's", got)
	}
	if got := rs[1].GetConfig("batch"); got != "256" {
		t.Errorf("batch config %q: the settings' 256 must win over the peer's own key", got)
	}
	data, _ := os.ReadFile(path)
	for _, u := range []string{"Unit ttfb-ns better=lower", "Unit samples/s better=higher", "Unit cpu-s better=lower"} {
		if !strings.Contains(string(data), u) {
			t.Errorf("file lacks %q:\n%s", u, data)
		}
	}
}

func TestPlots(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "peer")
	paths, err := peer.Plots(sampleReport().Rows, prefix, "peer")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{prefix + "-throughput.png", prefix + "-throughput.svg", prefix + "-ttfb.png", prefix + "-ttfb.svg"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, ".png") && !bytes.HasPrefix(data, []byte("\x89PNG")) ||
			strings.HasSuffix(p, ".svg") && !bytes.Contains(data, []byte("<svg")) {
			t.Errorf("%s is not a %s", p, filepath.Ext(p))
		}
	}
	// One worker count, one implementation: still drawn.
	if _, err := peer.Plots(peer.Summarize([]peer.Measurement{run("fast", 2, 10, time.Second)}), prefix, "one"); err != nil {
		t.Errorf("one point: %v", err)
	}
	if _, err := peer.Plots(nil, prefix, "none"); err == nil {
		t.Error("no rows: no error")
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := peer.WriteTable(&buf, sampleReport().Rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.txt.golden", buf.Bytes())
}

// ReportOf gives back the report of the run from its result file's lines
// (FileConfig) and runs: WriteMarkdown of both is the same, byte for
// byte. (Reading the file's records is workloads.PeerCodec's.)
func TestReportOfRoundTrip(t *testing.T) {
	want := sampleReport()
	want.Figures = nil
	want.Count = 3
	m := want.Machine
	config := []resultfile.Config{{Key: "cpu", Value: m.CPU}, {Key: "cores", Value: "2"}, {Key: "go", Value: m.Go}, {Key: "commit", Value: m.Commit}}
	config = append(config, want.Settings.Config()...)
	config = append(config, resultfile.Config{Key: "rounds", Value: "3"}, resultfile.Config{Key: "distro", Value: m.Distro}, resultfile.Config{Key: "command", Value: want.Command})
	var ms []peer.Measurement
	for _, r := range want.Rows {
		ms = append(ms, run(r.Impl, r.Workers, r.SamplesPerSec, r.TTFB))
	}
	got, err := peer.ReportOf("peer.txt", peer.FileConfig(config, want.PeerConfig), ms)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := peer.WriteMarkdown(&a, want); err != nil {
		t.Fatal(err)
	}
	if err := peer.WriteMarkdown(&b, got); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("report from the file:\n%s\nwant:\n%s", b.String(), a.String())
	}

	// A file without a key the report states is refused, naming it.
	if _, err := peer.ReportOf("peer.txt", config[:len(config)-1], ms); err == nil || !strings.Contains(err.Error(), "peer.txt: no command line") {
		t.Errorf("ReportOf without command: %v, want an error naming the file and the line", err)
	}
}

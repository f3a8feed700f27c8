package reproduce

import (
	"bytes"
	"context"
	"flag"
	"github.com/headspace-bench/headspace/harness/level"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/sim"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/workloads"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixedHeader is a header with every field fixed, for golden files.
func fixedHeader(id string, quick bool) Header {
	d, _ := Lookup(id)
	return Header{
		ID: d.ID, Title: d.Title, Source: d.Source,
		Command: "headspace reproduce --out notebooks",
		Quick:   quick,
		Machine: machine.Machine{CPU: "Intel(R) Xeon(R) Processor", Cores: 2, GOMAXPROCS: 2, OS: "linux", Arch: "amd64",
			Go: "go1.26.0", Commit: "abc1234", Date: time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)},
		Device:  "emulated: 290ms step (timer waits), host-to-device copies at 24 GB/s pinned (assumed PCIe 4.0 x16, not measured)",
		Elapsed: 95 * time.Second,
		Results: resultsLink(d),
	}
}

func fixed003() Result003 {
	nan := math.NaN()
	a := LadderStep{Key: "a", Title: "The caching ladder", Setup: "naive transforms, raw 1024×1024", Command: "headspace ladder --transforms naive",
		Rows: []LevelRow{
			{Level: level.Device, Doc: 3.45, DocAU: 95, Runs: []float64{3.447, 3.446, 3.448}, AU: []float64{99.9, 99.8, 99.9}},
			{Level: level.Host, Doc: 3.33, DocAU: nan, Runs: []float64{3.418, 3.42, 3.41}, AU: []float64{99, 99, 99}},
			{Level: level.Sample, Doc: 3.23, DocAU: nan, Runs: []float64{3.42, 3.421}, AU: []float64{99, 99}},
			{Level: level.Raw, Doc: 1.72, DocAU: nan, Runs: []float64{0.678, 0.69, 0.65}, AU: []float64{20, 20, 19}, Transform: 15 * time.Millisecond},
			{Level: level.None, Doc: 0.89, DocAU: 22, Runs: []float64{0.665}, AU: []float64{19}, Load: 1100 * time.Microsecond, Transform: 15500 * time.Microsecond},
		}}
	b := LadderStep{Key: "b", Title: "Transform fix", Setup: "fast transforms, raw 1024×1024", Command: "headspace ladder --transforms fast",
		Rows: []LevelRow{
			{Level: level.Device, Doc: 3.45, DocAU: nan, Runs: []float64{3.446}},
			{Level: level.Raw, Doc: 3.23, DocAU: nan, Runs: []float64{3.419}, Transform: 470 * time.Microsecond},
			{Level: level.None, Doc: 1.28, DocAU: nan, Runs: []float64{3.418}, Load: 900 * time.Microsecond, Transform: 480 * time.Microsecond},
		}}
	c := LadderStep{Key: "c", Title: "Smaller raw image (1024 → 256)", Setup: "fast transforms, raw 256×256", Command: "headspace ladder --raw-size 256",
		Rows: []LevelRow{
			{Level: level.Device, Doc: 3.45, DocAU: nan, Runs: []float64{3.446}},
			{Level: level.None, Doc: 3.23, DocAU: nan, Runs: []float64{3.44}, Load: 60 * time.Microsecond, Transform: 400 * time.Microsecond},
		}}
	tr := &TransferStep{Setup: "fast transforms, raw 256×256", Command: "headspace ladder --transfer float32\nheadspace ladder --transfer uint8"}
	for _, x := range []struct {
		transfer string
		bytes    int64
		upload   time.Duration
		convert  time.Duration
	}{{"float32", 201327616, 8389 * time.Microsecond, 0}, {"uint8", 50332672, 2097 * time.Microsecond, 201 * time.Microsecond}} {
		for _, l := range []level.Level{level.Device, level.Host, level.None} {
			row := TransferRow{Transfer: x.transfer, Level: l, Runs: []float64{3.44, 3.43}, ShapeBytes: x.bytes, Convert: x.convert}
			if l != level.Device {
				row.UploadBytes, row.Upload = float64(x.bytes), x.upload
			}
			tr.Rows = append(tr.Rows, row)
		}
	}
	od := &OnDiskStep{Setup: "fast transforms, crop 256, batch 256, 2 workers"}
	for _, x := range []struct {
		format, layout, cache string
		raw                   int
		none, encoded, rawL   float64
		content, decoder      string
	}{
		{"raw", "files", "warm", 1024, 2.9, 3.40, 3.43, "noise", "go"},
		{"raw", "shards", "warm", 1024, 3.41, 3.42, 3.43, "noise", "go"},
		{"jpeg", "files", "warm", 1024, 0.21, 0.22, 3.42, "noise", "go"},
		{"jpeg", "files", "cold", 1024, 0.19, 0.22, 3.42, "noise", "go"},
		{"jpeg", "files", "warm", 1024, 0.9, 0.95, 3.42, "noise", "turbojpeg"},
		{"jpeg", "files", "warm", 1024, 0.6, 0.62, 3.42, "natural", "go"},
		{"jpeg", "files", "warm", 1024, 2.5, 2.7, 3.42, "natural", "turbojpeg"},
	} {
		med := map[level.Level]float64{level.None: x.none, level.Encoded: x.encoded, level.Raw: x.rawL, level.Device: 3.45}
		ratios := map[level.Level]float64{}
		for l, v := range med {
			ratios[l] = v / 3.45
		}
		od.Rows = append(od.Rows, workloads.OnDiskRow{Case: workloads.OnDiskCase{Format: x.format, Layout: x.layout, RawSize: x.raw, PageCache: x.cache, Content: x.content, Decoder: x.decoder},
			Median: med, Ratio: ratios, Attribution: ladder.Attribute(med)})
	}
	measured := map[level.Level]float64{level.Device: 3.45, level.Host: 3.42, level.Sample: 3.42, level.Raw: 1.3, level.None: 1.1}
	model := []ModelReading{{Title: "naive transforms", Reading: whatif.LadderReading{
		Measured: measured, Predicted: map[level.Level]float64{level.Device: 3.45, level.Host: 3.45, level.Sample: 3.45, level.Raw: 1.2, level.None: 1.0},
		Ladder: ladder.Attribute(measured), Model: "transforms"}}}
	return Result003{Header: fixedHeader("003", false), Workers: 2, Batch: 256, Step: 290 * time.Millisecond, Steps: []LadderStep{a, b, c}, Transfer: tr,
		LadderFigure: "figures/003-ladder.png", StepsFigure: "figures/003-steps.png", Timeline: "figures/003-timeline-none.png",
		OnDisk: od, Model: model}
}

func fixed004() Result004 {
	rows := sim004Runs()
	for i := range rows {
		r := &rows[i]
		r.Seeds, r.Seed1, r.Mean, r.SD, r.Idle = 20, 98+i, 98.5+float64(i), 0.5*float64(i), 0.5
		r.Halting = "halts every 7 batches (13 of 13 runs; mean halt 1.3s)"
		if r.Animated {
			r.GIF = "figures/004-" + r.Load.String() + ".gif"
			r.Timeline = "figures/004-" + r.Load.String() + "-timeline.png"
		}
	}
	return Result004{Header: fixedHeader("004", true), Loaders: workloads.SimDocumentLoaders, Step: workloads.SimDocumentStep, Duration: workloads.SimDocumentDuration, GIFTick: 100 * time.Millisecond, Rows: rows}
}

// TestReportsGolden rebuilds every document's report from its result
// file in testdata/results (a quick run's, with the files saved beside
// it), as `headspace reproduce --from` does, and compares it with
// testdata/<id>-<name>.golden (go test -update rewrites them): what a
// renderer makes of a result file, byte for byte. A new report is its
// result file there and its golden file.
func TestReportsGolden(t *testing.T) {
	for _, d := range Docs {
		t.Run(d.ID, func(t *testing.T) {
			out := t.TempDir()
			paths, err := Run(context.Background(), []string{d.ID}, Options{From: filepath.Join("testdata", "results"), Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1 {
				t.Fatalf("wrote %v, want the one report", paths)
			}
			got, err := os.ReadFile(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			golden(t, d.ID+"-"+d.Name, got)
		})
	}
}

// TestMarkdownGolden renders the reports' variants that no result file
// in testdata/results holds (003 without the transfer step, the timeline,
// step (e) and the model) from fixed values and compares each with
// testdata/<name>.golden (go test -update rewrites them).
func TestMarkdownGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    interface{ WriteMarkdown(io.Writer) error }
	}{
		{"003-without-transfer", func() Result003 {
			r := fixed003()
			r.Transfer, r.Timeline, r.OnDisk, r.Model = nil, "", nil, nil
			return r
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.r.WriteMarkdown(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
}

// golden compares a report with testdata/<name>.golden, rewriting it with
// -update, and checks its format verbs and tables.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
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
		t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", name, path, got)
	}
	// No formatting mistakes, and every table row has its header's columns.
	if bytes.Contains(got, []byte("%!")) {
		t.Errorf("a format verb went wrong:\n%s", got)
	}
	checkTables(t, string(got))
}

// checkTables checks that every Markdown table's rows have as many cells as
// its header.
func checkTables(t *testing.T, doc string) {
	t.Helper()
	cols := -1
	for i, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = -1
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") - 1
		if cols < 0 {
			cols = n
		} else if n != cols {
			t.Errorf("line %d has %d cells, its table %d: %s", i+1, n, cols, line)
		}
	}
}

// TestRenderFailsOnWriteError checks a failing writer's error comes back.
func TestRenderFailsOnWriteError(t *testing.T) {
	if err := fixed004().WriteMarkdown(failWriter{}); err == nil {
		t.Error("no error from a failing writer")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestFormatting(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct{ got, want string }{
		{thousands(200000), "200,000"},
		{thousands(999), "999"},
		{thousands(1000), "1,000"},
		{thousands(-1234567), "-1,234,567"},
		{ratio(1, 2), "0.50×"},
		{ratio(1, 0), "–"},
		{ratio(nan, 2), "–"},
		{pct(2, 1), "−50%"},
		{pct(2, 2), "+0%"},
		{pct(1, 1.1), "+10%"},
		{num(nan, 2), "–"},
		{bytesHuman(201327616), "201.3 MB"},
		{bytesHuman(24608), "24.6 kB"},
		{bytesHuman(12), "12 B"},
		{spread([]float64{3, 1, 2}), "n = 3 < 6"},
		{spread([]float64{1.0, 1.05, 1.1, 1.1, 1.15, 1.2}), "1.00–1.20"},
		{spread(nil), "–"},
		{durText(1500 * time.Millisecond), "1.50 s"},
		{durText(889 * time.Microsecond), "889.0 µs"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if m := mean([]float64{2, 4}); m != 3 {
		t.Errorf("mean = %v, want 3", m)
	}
	if m := mean(nil); m != 0 {
		t.Errorf("mean of nothing = %v, want 0 (not measured)", m)
	}
}

func TestBottlenecks(t *testing.T) {
	rows := fixed003().Steps[0].Rows
	doc := bottlenecks(rows, func(r LevelRow) float64 { return r.Doc })
	if doc != "**raw data loading** (−48%, the bottleneck), then transforms (−47%)" {
		t.Errorf("document's bottlenecks: %s", doc)
	}
	ours := bottlenecks(rows, func(r LevelRow) float64 { return summary.Median(r.Runs) })
	if ours != "**transforms** (−80%, the bottleneck)" {
		t.Errorf("our bottlenecks: %s", ours)
	}
	flat := bottlenecks(fixed003().Steps[2].Rows, func(r LevelRow) float64 { return summary.Median(r.Runs) })
	if !strings.Contains(flat, "model step bounds it") {
		t.Errorf("flat ladder: %s", flat)
	}
}

func TestSimRunsMatchThePost(t *testing.T) {
	rows := sim004Runs()
	posts := map[string]int{}
	for _, r := range rows {
		if r.Animated {
			posts[r.Load.String()+" "+r.Dist] = r.Post
		}
	}
	want := map[string]int{"2s " + sim.Constant: 98, "700ms " + sim.Normal: 275, "350ms " + sim.Normal: 295}
	if len(posts) != len(want) {
		t.Fatalf("animated runs %v, want %v", posts, want)
	}
	for k, v := range want {
		if posts[k] != v {
			t.Errorf("%s: post %d, want %d", k, posts[k], v)
		}
	}
}

package workloads

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/resultfile"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/loader"
)

// runOnDisk measures o with its datasets under dir on dev, and returns
// its runs and their records (what Run returns).
func runOnDisk(o OnDisk, dir string, dev Device) ([]OnDiskResult, []*benchfmt.Result, error) {
	env := Env{Device: dev, Dir: dir}
	out, err := o.Measure(context.Background(), env)
	return out.Runs, OnDiskCodec.Encode(out), err
}

// TestOnDisk runs a small matrix and checks its shape: every case and
// point in order, records named by case and point with read-MB/s where
// the level fetches, medians and ratios to device per case, the datasets
// removed; and the matrix's bad settings refused.
func TestOnDisk(t *testing.T) {
	o := QuickOnDisk()
	o.Formats, o.RawSizes = []string{"raw", "jpeg"}, []int{32}
	o.Ladder.Train.Steps = 1
	dev := DocumentDevice()
	dev.Step = 1e6 // 1 ms
	dir := t.TempDir()
	rs, recs, err := runOnDisk(o, dir, Emulated(dev))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(rs) {
		t.Fatalf("%d records, %d runs", len(recs), len(rs))
	}
	for i := range recs {
		if recs[i] != rs[i].Record {
			t.Errorf("record %d: %s, the run's %s", i, recs[i].Name, rs[i].Record.Name)
		}
	}
	// The records read back from a file decode to the runs measured.
	back, err := OnDiskCodec.Decode(throughFile(t, recs))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range back.Runs {
		if r := rs[i]; b.Case != r.Case || b.Point != r.Point || b.StepsPerSec != r.StepsPerSec {
			t.Errorf("run %d decoded as %+v %+v %v, measured %+v %+v %v", i, b.Case, b.Point, b.StepsPerSec, r.Case, r.Point, r.StepsPerSec)
		}
	}
	plan := o.Plan()
	// raw: noise only, go only (2 layouts); jpeg: 2 contents × 2
	// layouts × 2 decoders. none in each; encoded once per format,
	// content and decoder (1 + 4); raw and device once.
	if len(plan) != 10 || len(rs) != 10+5+2 || o.Runs() != len(rs) {
		t.Fatalf("%d cases, %d results, %d runs planned", len(plan), len(rs), o.Runs())
	}
	var want []OnDiskResult
	for _, p := range plan {
		for _, l := range slices.Backward(p.Levels) { // the ladder runs device first
			want = append(want, OnDiskResult{Case: p.Case.For(l), Point: ladder.Point{Level: l}})
		}
	}
	for i, r := range rs {
		c, l := want[i].Case, want[i].Point.Level
		if r.Case != c || r.Point.Level != l || r.StepsPerSec <= 0 {
			t.Errorf("result %d: %s %s %v, want %s %s", i, r.Case.Name(), r.Point.Level, r.StepsPerSec, c.Name(), l)
		}
		if !strings.HasPrefix(string(r.Record.Name), "BenchmarkLadderOnDisk/"+c.Name()+"/level="+l.String()+"/") {
			t.Errorf("result %d: record %s", i, r.Record.Name)
		}
		read := false
		for _, v := range r.Record.Values {
			read = read || v.Unit == "read-MB/s" && v.Value > 0
		}
		if read != (l == level.None) {
			t.Errorf("%s: read-MB/s recorded: %v", r.Record.Name, read)
		}
	}
	rows := OnDiskRatios(rs)
	if len(rows) != len(plan) {
		t.Fatalf("%d rows for %d cases", len(rows), len(plan))
	}
	for i, row := range rows {
		if row.Case != plan[i].Case || row.Ratio[level.Device] != 1 || row.Ratio[level.None] <= 0 || len(row.Median) != len(o.Ladder.Levels) {
			t.Errorf("%s: medians %v ratios %v", row.Case.Name(), row.Median, row.Ratio)
		}
		// Every level but none is the shared measurement.
		if len(row.Shared) != 3 || row.Shared[level.None] {
			t.Errorf("%s: shared %v", row.Case.Name(), row.Shared)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("datasets left behind: %v", left)
	}

	for _, tc := range []struct {
		name string
		mut  func(*OnDisk)
		want string
	}{
		{"no formats", func(o *OnDisk) { o.Formats = nil }, "no cases"},
		{"unknown format", func(o *OnDisk) { o.Formats = []string{"webp"} }, `format "webp"`},
		{"unknown layout", func(o *OnDisk) { o.Layouts = []string{"zip"} }, `layout "zip"`},
		{"raw smaller than the crop", func(o *OnDisk) { o.RawSizes = []int{8} }, "smaller than the crop"},
		{"unknown page cache", func(o *OnDisk) { o.PageCaches = []string{"hot"} }, `--page-cache "hot"`},
		{"unknown content", func(o *OnDisk) { o.Contents = []string{"cats"} }, `content "cats"`},
		{"unknown decoder", func(o *OnDisk) { o.Decoders = []string{"libjpeg"} }, `decoder "libjpeg"`},
		{"device decoder", func(o *OnDisk) { o.Decoders = []string{"nvjpeg"} }, "decoder nvjpeg decodes on the device"},
	} {
		bad := QuickOnDisk()
		tc.mut(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	def := DefaultOnDisk()
	if err := def.Validate(); err != nil {
		t.Errorf("DefaultOnDisk: %v", err)
	}
	// raw 1 content × 1 decoder, png 2 × 1, jpeg 2 × 2; × 2 layouts × 2 sizes.
	if n := len(def.Cases()); n != (1+2+4)*2*2*len(def.PageCaches) || (ondisk.EvictAvailable != (len(def.PageCaches) == 2)) {
		t.Errorf("DefaultOnDisk: %d cases, page caches %v", n, def.PageCaches)
	}
}

// TestLadderOnDiskSettings checks the result file's configuration of a
// sweep over a dataset on disk: the manifest's identity and the page
// cache; none of it without one; and encoded refused without one.
func TestLadderOnDiskSettings(t *testing.T) {
	l := QuickLadder()
	for _, c := range l.Settings() {
		if strings.HasPrefix(c.Key, "data-") || c.Key == "page-cache" {
			t.Errorf("synthetic sweep records %s", c.Key)
		}
	}
	dir := t.TempDir() + "/data"
	src := l.Pipeline.Dataset
	src.N = 20
	if _, err := ondisk.Write(context.Background(), dir, src, ondisk.WriteOptions{Format: "jpeg", Quality: 80, Layout: "shards", ShardSize: 8}); err != nil {
		t.Fatal(err)
	}
	var err error
	if l.Pipeline, err = l.Pipeline.WithData(dir); err != nil {
		t.Fatal(err)
	}
	l.Pipeline.PageCache = loader.PageWarm
	sum, _ := ondisk.ManifestSum(dir)
	got := map[string]string{}
	for _, c := range l.Settings() {
		got[c.Key] = c.Value
	}
	for k, v := range map[string]string{"data-format": "jpeg-q80", "data-layout": "shards-of-8", "data-manifest-sha256": sum,
		"page-cache": "warm", "samples": "20", "raw-size": "96x96", "max-failures": "0"} {
		if got[k] != v || v == "" {
			t.Errorf("setting %s = %q, want %q", k, got[k], v)
		}
	}
	syn := QuickLadder()
	syn.Levels = []level.Level{level.Encoded}
	if err := syn.Validate(); err == nil || !strings.Contains(err.Error(), "level encoded needs a dataset on disk") {
		t.Errorf("encoded without data: %v", err)
	}
}

// TestOnDiskPlan checks which cases run which levels: none in every case,
// encoded once per format, content, decoder and raw size, raw and device
// once per raw size, each in the first case that has it; and the run
// counts of the default matrix.
func TestOnDiskPlan(t *testing.T) {
	all := []level.Level{level.None, level.Encoded, level.Raw, level.Device}
	for _, tc := range []struct {
		name    string
		mut     func(*OnDisk)
		levels  []level.Level
		want    map[string][]level.Level // case name → its levels; unnamed cases run none only
		noneOut bool                     // the ladder has no none: unnamed cases run nothing
	}{
		{"one size, warm", func(o *OnDisk) {
			o.Formats, o.Contents, o.Decoders, o.RawSizes = []string{"raw", "jpeg"}, []string{"noise", "natural"}, []string{"go", "turbojpeg"}, []int{32}
		}, all, map[string][]level.Level{
			"format=raw/content=noise/decoder=go/layout=files/raw=32/page-cache=warm":           all,
			"format=jpeg/content=noise/decoder=go/layout=files/raw=32/page-cache=warm":          {level.None, level.Encoded},
			"format=jpeg/content=noise/decoder=turbojpeg/layout=files/raw=32/page-cache=warm":   {level.None, level.Encoded},
			"format=jpeg/content=natural/decoder=go/layout=files/raw=32/page-cache=warm":        {level.None, level.Encoded},
			"format=jpeg/content=natural/decoder=turbojpeg/layout=files/raw=32/page-cache=warm": {level.None, level.Encoded},
		}, false},
		{"two sizes, cold first", func(o *OnDisk) {
			o.Formats, o.Layouts, o.RawSizes, o.PageCaches = []string{"png"}, []string{"shards", "files"}, []int{64, 32}, []string{"cold", "warm"}
			o.Contents = []string{"natural"}
		}, all, map[string][]level.Level{
			"format=png/content=natural/decoder=go/layout=shards/raw=64/page-cache=cold": all,
			"format=png/content=natural/decoder=go/layout=shards/raw=32/page-cache=cold": all,
		}, false},
		{"no none", func(o *OnDisk) {
			o.Formats, o.RawSizes = []string{"png", "jpeg"}, []int{32}
			o.Contents, o.Decoders = []string{"noise"}, []string{"go"}
		}, []level.Level{level.Encoded, level.Device}, map[string][]level.Level{
			"format=png/content=noise/decoder=go/layout=files/raw=32/page-cache=warm":  {level.Encoded, level.Device},
			"format=jpeg/content=noise/decoder=go/layout=files/raw=32/page-cache=warm": {level.Encoded},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := QuickOnDisk()
			tc.mut(&o)
			o.Ladder.Levels = tc.levels
			n := 0
			for _, p := range o.Plan() {
				want, ok := tc.want[p.Case.Name()]
				if !ok && !tc.noneOut {
					want = []level.Level{level.None}
				}
				if !slices.Equal(p.Levels, want) {
					t.Errorf("%s: levels %v, want %v", p.Case.Name(), p.Levels, want)
				}
				n += len(want)
			}
			if o.Runs() != n*o.Ladder.Count {
				t.Errorf("%d runs, want %d", o.Runs(), n*o.Ladder.Count)
			}
		})
	}

	// The default matrix on a machine that can evict the page cache: 56
	// cases; 56 none, 14 encoded (raw 1, PNG 2, JPEG 4 per size; 2 sizes),
	// 2 raw, 2 device points.
	def := DefaultOnDisk()
	def.PageCaches = []string{loader.PageWarm, loader.PageCold}
	if n, runs := len(def.Cases()), def.Runs(); n != 56 || runs != (56+14+2+2)*def.Ladder.Count {
		t.Errorf("default matrix: %d cases, %d runs", n, runs)
	}
}

// TestOnDiskCaseFor checks the level table's rule: which dimensions each
// level's measurement depends on, and the shared case's name.
func TestOnDiskCaseFor(t *testing.T) {
	c := OnDiskCase{Format: "jpeg", Content: "natural", Decoder: "turbojpeg", Layout: "shards", RawSize: 256, PageCache: "cold"}
	for _, tc := range []struct {
		l       level.Level
		name    string
		depends string
	}{
		{level.None, "format=jpeg/content=natural/decoder=turbojpeg/layout=shards/raw=256/page-cache=cold", "format, content, decoder, layout, raw size, page cache"},
		{level.Encoded, "format=jpeg/content=natural/decoder=turbojpeg/raw=256", "format, content, decoder, raw size"},
		{level.Raw, "raw=256", "raw size"},
		{level.Sample, "raw=256", "raw size"},
		{level.Host, "raw=256", "raw size"},
		{level.Device, "raw=256", "raw size"},
	} {
		k := c.For(tc.l)
		if k.Name() != tc.name || k.Shared() != (tc.l != level.None) || k.For(tc.l) != k {
			t.Errorf("%s: %s (shared %v)", tc.l, k.Name(), k.Shared())
		}
		if got := strings.Join(OnDiskDepends(tc.l), ", "); got != tc.depends {
			t.Errorf("%s depends on %s, want %s", tc.l, got, tc.depends)
		}
	}
}

// TestOnDiskRatiosShared checks that a case reads the shared measurement
// of a level it did not run, its own where it ran it (a file from before
// the sharing has every level of every case), and that a shared point no
// case reads is a row of its own.
func TestOnDiskRatiosShared(t *testing.T) {
	a := OnDiskCase{Format: "jpeg", Content: "noise", Decoder: "go", Layout: "files", RawSize: 64, PageCache: "warm"}
	b := a
	b.Layout = "shards"
	other := OnDiskCase{RawSize: 32}
	res := func(c OnDiskCase, l level.Level, v ...float64) []OnDiskResult {
		var out []OnDiskResult
		for _, x := range v {
			out = append(out, OnDiskResult{Case: c, Point: ladder.Point{Level: l}, StepsPerSec: x})
		}
		return out
	}
	var rs []OnDiskResult
	rs = append(rs, res(a.For(level.Device), level.Device, 4, 3, 5)...)
	rs = append(rs, res(a.For(level.Raw), level.Raw, 3)...)
	rs = append(rs, res(a.For(level.Encoded), level.Encoded, 2)...)
	rs = append(rs, res(a, level.None, 1)...)
	rs = append(rs, res(b, level.None, 2)...)
	rs = append(rs, res(b, level.Device, 8)...) // its own: an old file's
	rs = append(rs, res(other, level.Device, 9)...)
	rows := OnDiskRatios(rs)
	for i, want := range []struct {
		c      OnDiskCase
		median map[level.Level]float64
		shared []level.Level
	}{
		{a, map[level.Level]float64{level.None: 1, level.Encoded: 2, level.Raw: 3, level.Device: 4}, []level.Level{level.Encoded, level.Raw, level.Device}},
		{b, map[level.Level]float64{level.None: 2, level.Encoded: 2, level.Raw: 3, level.Device: 8}, []level.Level{level.Encoded, level.Raw}},
		{other, map[level.Level]float64{level.Device: 9}, nil},
	} {
		if i >= len(rows) {
			t.Fatalf("%d rows", len(rows))
		}
		row := rows[i]
		var shared []level.Level
		for _, l := range level.For(level.Disk) {
			if row.Shared[l] {
				shared = append(shared, l)
			}
		}
		if row.Case != want.c || !maps.Equal(row.Median, want.median) || !slices.Equal(shared, want.shared) || row.Ratio[level.None] != want.median[level.None]/want.median[level.Device] {
			t.Errorf("row %d: %s %v shared %v ratios %v, want %s %v shared %v", i, row.Case.Name(), row.Median, shared, row.Ratio, want.c.Name(), want.median, want.shared)
		}
	}
	if len(rows) != 3 {
		t.Errorf("%d rows, want 3", len(rows))
	}
}

// TestOnDiskCodecReadsTheCommittedFile: the committed 003 file's step (e)
// records (shared points among them) decode, and encode back to exactly
// those records.
func TestOnDiskCodecReadsTheCommittedFile(t *testing.T) {
	all, err := resultfile.Read(fromRoot("notebooks/results/003-caching-ladder.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*benchfmt.Result
	for _, r := range all {
		if strings.HasPrefix(string(r.Name), "LadderOnDisk/") {
			recs = append(recs, r)
		}
	}
	out, err := OnDiskCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, r := range out.Runs {
		if r.Case.Shared() {
			shared++
		}
	}
	if len(recs) < 10 || shared == 0 || !slices.Equal(OnDiskCodec.Encode(out), recs) {
		t.Errorf("%d records, %d runs of shared points, encoded back equal: %v", len(recs), shared, slices.Equal(OnDiskCodec.Encode(out), recs))
	}
}

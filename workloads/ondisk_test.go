package workloads

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/blocks/loader"
	"github.com/headspace-bench/headspace/harness/engines/ladder"
)

// BenchmarkLadderOnDisk runs the on-disk matrix, one run per point per
// iteration, from datasets it writes to a temp directory, and reports each
// point's steps/s and read-MB/s (where it fetches) as a sub-benchmark
// named like the records: BenchmarkLadderOnDisk/format=jpeg/layout=shards/
// raw=64/page-cache=warm/level=none/…. -short runs QuickOnDisk (PNG and
// JPEG, files and shards, 64² and 32², levels none, encoded, raw and
// device; seconds); without it, DefaultOnDisk (gigabytes on disk, long).
// Bound it with -benchtime 1x.
func BenchmarkLadderOnDisk(b *testing.B) {
	o, dev := DefaultOnDisk(), DocumentDevice()
	if testing.Short() {
		o, dev.Step = QuickOnDisk(), QuickStep
		o.Formats = []string{"png", "jpeg"}
	}
	var rs []OnDiskResult
	for range b.N {
		got, err := o.Sweep(context.Background(), b.TempDir(), Emulated(dev))
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, got...)
	}
	b.StopTimer()
	for _, r := range rs {
		name := strings.TrimPrefix(string(r.Record.Name), "BenchmarkLadderOnDisk/")
		if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') {
			name = name[:i]
		}
		b.Run(name, func(b *testing.B) { reportRecord(b, r.Record) })
	}
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
	rs, err := o.Sweep(context.Background(), dir, Emulated(dev))
	if err != nil {
		t.Fatal(err)
	}
	cases := o.Cases()
	// raw: noise only, go only (2 layouts); jpeg: 2 contents × 2
	// layouts × 2 decoders.
	if len(cases) != 10 || len(rs) != len(cases)*len(o.Ladder.Levels) {
		t.Fatalf("%d cases, %d results", len(cases), len(rs))
	}
	for i, r := range rs {
		c, l := cases[i/len(o.Ladder.Levels)], o.Ladder.Levels[len(o.Ladder.Levels)-1-i%len(o.Ladder.Levels)]
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
		if read != (l == ladder.None) {
			t.Errorf("%s: read-MB/s recorded: %v", r.Record.Name, read)
		}
	}
	rows := OnDiskRatios(rs)
	if len(rows) != len(cases) {
		t.Fatalf("%d rows for %d cases", len(rows), len(cases))
	}
	for _, row := range rows {
		if row.Ratio[ladder.Device] != 1 || row.Ratio[ladder.None] <= 0 || len(row.Median) != len(o.Ladder.Levels) {
			t.Errorf("%s: medians %v ratios %v", row.Case.Name(), row.Median, row.Ratio)
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
		{"unknown page cache", func(o *OnDisk) { o.PageCaches = []string{"hot"} }, `page cache "hot"`},
		{"unknown content", func(o *OnDisk) { o.Contents = []string{"cats"} }, `content "cats"`},
		{"unknown decoder", func(o *OnDisk) { o.Decoders = []string{"libjpeg"} }, `decoder "libjpeg"`},
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
	syn.Levels = []ladder.Level{ladder.Encoded}
	if err := syn.Validate(); err == nil || !strings.Contains(err.Error(), "level encoded needs a dataset on disk") {
		t.Errorf("encoded without data: %v", err)
	}
}

package loader

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/level"
)

// onDisk writes small(impl, workers)'s dataset, n samples, to a temp
// directory in format and layout (shards of 5) and returns the
// configuration reading it.
func onDisk(t testing.TB, format, layout string, n, workers int) Config {
	t.Helper()
	cfg := small("fast", workers)
	cfg.Dataset.N = n
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := ondisk.Write(context.Background(), dir, cfg.Dataset, ondisk.WriteOptions{Format: format, Layout: layout, ShardSize: 5, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := small("fast", workers).WithData(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dataset != cfg.Dataset || got.Data != dir {
		t.Fatalf("WithData: dataset %+v in %q, want %+v in %q", got.Dataset, got.Data, cfg.Dataset, dir)
	}
	return got
}

// decoded is sample i of the dataset on disk, decoded directly.
func decoded(t *testing.T, cfg Config, i int) *datasets.Sample {
	t.Helper()
	d, err := ondisk.Open(cfg.Data)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := datasets.NewSample(cfg.Dataset.Width, cfg.Dataset.Height)
	if err := d.Fill(i, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// drain runs a loader of cfg at cache for n batches and returns them
// (copied) and the loader, closed.
func drain(t *testing.T, cache level.Level, cfg Config, n int) ([][]float32, [][]int32, *Loader, error) {
	t.Helper()
	l, err := New(context.Background(), cache, cfg, n)
	if err != nil {
		return nil, nil, nil, err
	}
	var data [][]float32
	var labels [][]int32
	for {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			l.Close()
			return data, labels, l, err
		}
		data = append(data, slices.Clone(b.Data))
		labels = append(labels, slices.Clone(b.Labels))
		l.Release(b)
	}
	return data, labels, l, l.Close()
}

// TestLoaderOnDisk checks every batch read from a dataset on disk, in
// each format and layout, at the levels that read it: equal to
// transforming the decoded sample the level must deliver; the stages
// fetch and decode instead of load; the bytes fetched counted.
func TestLoaderOnDisk(t *testing.T) {
	for _, format := range ondisk.Formats {
		for _, layout := range ondisk.Layouts {
			cfg := onDisk(t, format, layout, 12, 2)
			for _, cache := range []level.Level{level.None, level.Encoded, level.Raw, level.Sample} {
				const n = 4 // batches of 4: 16 samples, more than the 12
				data, labels, l, err := drain(t, cache, cfg, n)
				if err != nil {
					t.Fatalf("%s/%s/%s: %v", format, layout, cache, err)
				}
				if len(data) != n {
					t.Fatalf("%s/%s/%s: %d batches, want %d", format, layout, cache, len(data), n)
				}
				for k := range n {
					for j := range cfg.Batch {
						pos := k*cfg.Batch + j
						raw, stream := 0, pos
						switch cache {
						case level.None:
							raw = pos % cfg.Dataset.N
						case level.Sample:
							stream = 0
						}
						src := decoded(t, cfg, raw)
						if format != "jpeg" {
							// Lossless: the synthetic sample itself.
							syn := datasets.NewSample(cfg.Dataset.Width, cfg.Dataset.Height)
							_ = cfg.Dataset.Fill(raw, syn)
							if !slices.Equal(syn.Image.Pix, src.Image.Pix) {
								t.Fatalf("%s: sample %d differs from the synthetic one", format, raw)
							}
						}
						want := transformOf(t, cfg, src, stream)
						got := data[k][j*cfg.Transforms.OutLen() : (j+1)*cfg.Transforms.OutLen()]
						if !slices.Equal(got, want) || int(labels[k][j]) != src.Label {
							t.Fatalf("%s/%s/%s: batch %d sample %d differs", format, layout, cache, k, j)
						}
					}
				}
				var names []string
				for _, st := range l.Stats().Stages {
					names = append(names, st.Name)
				}
				if want := []string{"index", "fetch", "decode", "transform", "collate", "batch"}; !slices.Equal(names, want) {
					t.Errorf("%s/%s/%s: stages %v, want %v", format, layout, cache, names, want)
				}
				ds := l.Data()
				if (cache == level.None) != (ds.Fetched > 0) || ds.Failures != 0 {
					t.Errorf("%s/%s/%s: data stats %+v", format, layout, cache, ds)
				}
			}
		}
	}
}

// transformOf is src transformed with the stream of pos.
func transformOf(t *testing.T, cfg Config, src *datasets.Sample, pos int) []float32 {
	t.Helper()
	tr, err := newTransformer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := newProcessed(batching.Float32, cfg.Transforms.OutLen())
	if err := tr.apply(context.Background(), out, &src.Image, cfg.Dataset.Seed, pos); err != nil {
		t.Fatal(err)
	}
	return out.data
}

// TestLoaderOnDiskFailures breaks one sample file in each way and checks
// that the run stops with one line naming the file and the sample, or,
// with MaxFailures, skips and counts it; and that a BatchFiller (a worker
// process's loader) does the same.
func TestLoaderOnDiskFailures(t *testing.T) {
	for _, tc := range []struct {
		name, format, layout string
		breakIt              func(t *testing.T, dir string)
		want                 string
	}{
		{"missing file", "png", "files", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "000005.png")))
		}, "000005.png"},
		{"truncated file", "jpeg", "files", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, "000005.jpg"), 100))
		}, "000005.jpg"},
		{"corrupt file", "png", "files", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "000005.png"), []byte("not a png at all"), 0o644))
		}, "000005.png"},
		{"corrupt member", "jpeg", "shards", func(t *testing.T, dir string) {
			// Sample 5's JPEG, first in the second shard, overwritten
			// with zeros.
			f, err := os.OpenFile(filepath.Join(dir, ondisk.ShardName(1)), os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			members, err := ondisk.IndexShard(f)
			must(t, err)
			if members[0].Name != "000005.jpg" {
				t.Fatalf("first member %s", members[0].Name)
			}
			_, err = f.WriteAt(make([]byte, 64), members[0].Offset)
			must(t, err)
		}, "member 000005.jpg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := onDisk(t, tc.format, tc.layout, 12, 2)
			tc.breakIt(t, cfg.Data)
			const n = 3 // 12 samples: sample 5 once
			_, _, _, err := drain(t, level.None, cfg, n)
			if err == nil {
				t.Fatal("a broken sample went unnoticed")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "sample 5") {
				t.Errorf("error %q: want one line naming %q and sample 5", msg, tc.want)
			}
			cfg.MaxFailures = 1
			data, _, l, err := drain(t, level.None, cfg, n)
			if err != nil || len(data) != n {
				t.Fatalf("MaxFailures 1: %d batches, %v", len(data), err)
			}
			if f := l.Data().Failures; f != 1 {
				t.Errorf("MaxFailures 1: %d failures counted, want 1", f)
			}
			f, err := cfg.NewBatchFiller()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			pool, _ := batching.NewPool(cfg.Batch, cfg.Transforms.OutLen())
			for k := range n {
				if err := f.Fill(k, pool.Get()); err != nil {
					t.Fatalf("BatchFiller, MaxFailures 1: batch %d: %v", k, err)
				}
			}
			if f.Failures() != 1 {
				t.Errorf("BatchFiller: %d failures, want 1", f.Failures())
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchFillerOnDisk checks that a BatchFiller opens the dataset by
// path and fills the loader's batches bit for bit.
func TestBatchFillerOnDisk(t *testing.T) {
	cfg := onDisk(t, "jpeg", "shards", 12, 1)
	data, _, _, err := drain(t, level.None, cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cfg.NewBatchFiller()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pool, _ := batching.NewPool(cfg.Batch, cfg.Transforms.OutLen())
	b := pool.Get()
	for k := range data {
		must(t, f.Fill(k, b))
		if !slices.Equal(b.Data, data[k]) {
			t.Errorf("batch %d: the filler differs from the loader", k)
		}
	}
}

// TestOnDiskConfig checks the settings a dataset on disk adds: refused
// without one, out of range, on the wrong dataset, and the page-cache
// modes.
func TestOnDiskConfig(t *testing.T) {
	good := small("fast", 1)
	for _, tc := range []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"max failures without data", func(c *Config) { c.MaxFailures = 2 }, "needs a dataset on disk"},
		{"page cache without data", func(c *Config) { c.PageCache = PageWarm }, "needs a dataset on disk"},
		{"negative max failures", func(c *Config) { c.MaxFailures = -1 }, "--max-failures -1"},
		{"huge max failures", func(c *Config) { c.Data, c.MaxFailures = "x", MaxMaxFailures+1 }, "want 0 to"},
		{"unknown page cache", func(c *Config) { c.Data, c.PageCache = "x", "tepid" }, `--page-cache "tepid"`},
	} {
		cfg := good
		tc.mut(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(context.Background(), level.Encoded, good, 1); err == nil || !strings.Contains(err.Error(), "level encoded needs a dataset on disk") {
		t.Errorf("level.Encoded without data: %v", err)
	}
	if _, err := good.WithData(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no manifest") {
		t.Errorf("WithData of an empty directory: %v", err)
	}
	cfg := onDisk(t, "raw", "files", 12, 1)
	wrong := cfg
	wrong.Dataset.N = 13
	if _, err := New(context.Background(), level.None, wrong, 1); err == nil || !strings.Contains(err.Error(), "holds 12 samples of 32x24") {
		t.Errorf("a configuration that is not the dataset's: %v", err)
	}
	modes := []string{PageWarm}
	if ondisk.EvictAvailable {
		modes = append(modes, PageCold)
	} else {
		c := cfg
		c.PageCache = PageCold
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "eviction is not available on "+runtime.GOOS) {
			t.Errorf("cold without eviction: %v", err)
		}
	}
	for _, m := range modes {
		c := cfg
		c.PageCache = m
		if data, _, _, err := drain(t, level.None, c, 2); err != nil || len(data) != 2 {
			t.Errorf("page cache %s: %d batches, %v", m, len(data), err)
		}
	}
}

// TestOnDiskAllocs checks that reading raw shards allocates nothing per
// sample once the pools are full: fetch reads into a pooled buffer, decode
// into a pooled sample. (PNG and JPEG decoding allocate: Go's decoders
// make their own image per call; opening a file in the files layout
// allocates too.)
func TestOnDiskAllocs(t *testing.T) {
	cfg := onDisk(t, "raw", "shards", 12, 2)
	cfg.Batch = 8
	const runs = 40
	l, err := New(context.Background(), level.None, cfg, runs+8)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	allocs := testing.AllocsPerRun(runs, func() {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		l.Release(b)
	})
	// Per batch of 8 samples: under one allocation means none per sample.
	if allocs >= 1 {
		t.Errorf("%.1f allocations per batch of %d samples from raw shards, want none per sample", allocs, cfg.Batch)
	}
}

package loader

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/s3server"
)

// TestLoaderRunsTheTablesStages: at every level that runs a loader, on
// every source it runs on (the synthetic fill, a directory, a bucket),
// the loader runs the code of exactly the stages the level table says it
// runs, once per sample, the others handing out the cache made before
// timing; it records the source's stages under their names; and at a
// level that keeps the network's output it reads a local copy, not the
// bucket.
func TestLoaderRunsTheTablesStages(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	srv, err := s3server.Start(ctx, s3server.Options{})
	must(t, err)
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	disk := onDisk(t, "jpeg", "files", 12, 2)
	u, _ := bucket.ParseURL("s3://cut/ds")
	opts := bucket.Options{Endpoint: srv.Endpoint(), Concurrency: 3}
	mk, err := bucket.OpenUnchecked(u, opts)
	must(t, err)
	must(t, mk.MakeBucket(ctx))
	c, err := bucket.Open(ctx, u, opts)
	must(t, err)
	_, err = ondisk.Upload(ctx, c, disk.Data)
	must(t, err)
	remote := disk
	remote.Bucket = opts
	remote, err = remote.WithData("s3://cut/ds")
	must(t, err)

	const batches = 4 // of 4: 16 samples
	for src, cfg := range map[level.Source]Config{level.Synthetic: small("fast", 2), level.Disk: disk, level.Bucket: remote} {
		if cfg.Source() != src {
			t.Fatalf("%s: Source() = %s", cfg.Data, cfg.Source())
		}
		// The loader's stages: its index, then the source's up to batching
		// (the network read has no stage of its own: fetch makes it).
		names := []string{"index"}
		for _, s := range level.Stages(src) {
			if s == level.Upload {
				break
			}
			if s != level.Network {
				names = append(names, string(s))
			}
		}
		for _, lv := range level.For(src) {
			if !lv.Loader() {
				continue
			}
			var mu sync.Mutex
			ran := map[level.Stage]int{}
			stageRan = func(s level.Stage) { mu.Lock(); ran[s]++; mu.Unlock() }
			_, _, ld, err := drain(t, lv, cfg, batches)
			stageRan = nil
			if err != nil {
				t.Fatalf("%s on %s: %v", lv, src, err)
			}
			var want []level.Stage
			for _, s := range level.Stages(src) {
				if slices.Contains(level.SampleStages, s) && lv.Runs(s) {
					want = append(want, s)
				}
			}
			if got := slices.Sorted(maps.Keys(ran)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Errorf("%s on %s ran %v, the table says %v", lv, src, got, want)
			}
			for s, n := range ran {
				if n != batches*cfg.Batch {
					t.Errorf("%s on %s: %s ran %d times, want once a sample (%d)", lv, src, s, n, batches*cfg.Batch)
				}
			}
			var got []string
			for _, st := range ld.Stats().Stages {
				got = append(got, st.Name)
			}
			if !slices.Equal(got, names) {
				t.Errorf("%s on %s: stages %v, want %v", lv, src, got, names)
			}
			if src != level.Bucket {
				continue
			}
			// The network's output kept is the local copy; the fetch stage
			// then sends no request.
			ds := ld.Data()
			kept, _ := lv.Kept(src)
			if network := lv.Runs(level.Network); (kept == level.Network) != (ds.Copied > 0) || lv.Runs(level.Fetch) && network != (ds.Requests > 0) {
				t.Errorf("%s on %s runs the network %v, keeps %q: copied %d bytes first, then %d requests", lv, src, network, kept, ds.Copied, ds.Requests)
			}
		}
	}
}

// TestKeepers: every stage that a level running a loader keeps, of any
// source's pipeline, has a keeper, so a new level cut at an existing
// stage needs none of its own; a level whose kept stage has none (here
// transform's, taken out) is refused before anything runs, naming the
// stage, and so is a level above batching, which no loader runs.
func TestKeepers(t *testing.T) {
	for _, lv := range level.For(level.Bucket) {
		for src := lv.Needs(); src <= level.Bucket && lv.Loader(); src++ {
			if kept, ok := lv.Kept(src); ok && keepers[kept] == nil {
				t.Errorf("%s on %s keeps %s: no keeper", lv, src, kept)
			}
		}
	}
	cfg := small("fast", 1)
	if err := cfg.Supports(level.Host); err == nil || err.Error() != "loader: level host keeps a whole batch: no loader runs" {
		t.Errorf("host: %v", err)
	}
	saved := keepers[level.Transform]
	delete(keepers, level.Transform)
	defer func() { keepers[level.Transform] = saved }()
	want := "loader: level sample keeps the output of stage transform: the loader has no cache of it"
	if err := cfg.Supports(level.Sample); err == nil || err.Error() != want {
		t.Errorf("Supports(sample) without transform's keeper: %v", err)
	}
	if _, err := New(context.Background(), level.Sample, cfg, 1); err == nil || err.Error() != want {
		t.Errorf("New(sample) without transform's keeper: %v", err)
	}
	if err := cfg.Supports(level.Raw); err != nil {
		t.Errorf("Supports(raw) without transform's keeper: %v", err)
	}
}

package ondisk

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
)

// TestHandleReadsManifestOnce checks that a Handle is the inspection
// kept: with the manifest gone after Resolve, its Info is still what
// InspectWith said before, and Open still reads the samples (the shards'
// own files), where InspectWith and OpenContext, which read the manifest,
// no longer find a headspace dataset.
func TestHandleReadsManifestOnce(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	for _, layout := range Layouts {
		src := datasets.Synthetic{Width: 16, Height: 12, Classes: 3, N: 7, Seed: 5}
		dir := filepath.Join(t.TempDir(), "data")
		if _, err := Write(ctx, dir, src, WriteOptions{Format: "png", Layout: layout, ShardSize: 3, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		want, err := InspectWith(ctx, dir, bucket.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := Resolve(ctx, dir, bucket.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, ManifestName)); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h.Info(), want) || h.URI() != dir || h.Manifest() == nil || h.Manifest().Count != src.N {
			t.Fatalf("%s: handle %+v (manifest %v) of %s, want %+v", layout, h.Info(), h.Manifest() != nil, h.URI(), want)
		}
		// Without its manifest, the directory is no headspace dataset (the
		// shards would pass for a user's WebDataset).
		if in, err := InspectWith(ctx, dir, bucket.Options{}); err == nil && in.Kind == "headspace" {
			t.Fatalf("%s: InspectWith without the manifest: a headspace dataset", layout)
		}
		if d, err := OpenContext(ctx, dir, Options{}); err == nil {
			foreign := d.foreign != nil
			d.Close()
			if !foreign {
				t.Fatalf("%s: OpenContext without the manifest: a headspace dataset", layout)
			}
		}
		d, err := h.Open(ctx, Options{})
		if err != nil {
			t.Fatalf("%s: Open: %v", layout, err)
		}
		got, syn := datasets.NewSample(16, 12), datasets.NewSample(16, 12)
		for i := range src.N {
			if err := d.Fill(i, got); err != nil {
				t.Fatalf("%s: sample %d: %v", layout, i, err)
			}
			_ = src.Fill(i, syn)
			if !slices.Equal(got.Image.Pix, syn.Image.Pix) || got.Label != syn.Label {
				t.Fatalf("%s: sample %d differs from the synthetic one", layout, i)
			}
		}
		d.Close()
	}
}

// TestHandleIndexesOnce checks that a user's ImageFolder is indexed once
// per handle: an image added after Resolve is in neither its Info nor the
// dataset Open gives, while OpenContext, which indexes it again, sees it.
func TestHandleIndexesOnce(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "1.jpg"), encodeTest(t, "jpeg", 24, 16, 1))
	writeFile(t, filepath.Join(dir, "b", "2.jpg"), encodeTest(t, "jpeg", 24, 16, 2))
	h, err := Resolve(ctx, dir, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "b", "3.jpg"), encodeTest(t, "jpeg", 24, 16, 3))
	if in := h.Info(); in.Kind != KindImageFolder || in.Count != 2 || h.Manifest() != nil {
		t.Fatalf("handle: %+v, manifest %v; want an imagefolder of 2 samples, no manifest", in, h.Manifest())
	}
	d, err := h.Open(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fresh, err := OpenContext(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if d.Len() != 2 || fresh.Len() != 3 || d.foreign.Sum() != h.Info().Sum || fresh.foreign.Sum() == h.Info().Sum {
		t.Fatalf("Open: %d samples (sum %s), OpenContext %d (sum %s); want 2 (the handle's %s) and 3", d.Len(), d.foreign.Sum(), fresh.Len(), fresh.foreign.Sum(), h.Info().Sum)
	}
	s := datasets.NewSample(24, 16)
	for i := range d.Len() {
		if err := d.Fill(i, s); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
	}
}

// TestHandleDescribes checks what a Handle stands for: its URI, and for a
// bucket its endpoint, not the other bucket options.
func TestHandleDescribes(t *testing.T) {
	local := &Handle{uri: "/data/x", endpoint: "http://a"}
	remote := &Handle{uri: "s3://b/p", endpoint: "http://a"}
	var none *Handle
	for _, c := range []struct {
		h    *Handle
		uri  string
		bo   bucket.Options
		want bool
	}{
		{local, "/data/x", bucket.Options{Endpoint: "http://other"}, true},
		{local, "/data/y", bucket.Options{}, false},
		{remote, "s3://b/p", bucket.Options{Endpoint: "http://a", Concurrency: 9, Retries: -1}, true},
		{remote, "s3://b/p", bucket.Options{Endpoint: "http://other"}, false},
		{remote, "s3://b/q", bucket.Options{Endpoint: "http://a"}, false},
		{none, "/data/x", bucket.Options{}, false},
	} {
		if got := c.h.Describes(c.uri, c.bo); got != c.want {
			t.Errorf("%v.Describes(%s, %q) = %v, want %v", c.h, c.uri, c.bo.Endpoint, got, c.want)
		}
	}
}

//go:build peersenv

// The tests that run the real peers' scripts: they need the pinned peers
// env (make peers-env) and run from `make test-peers`, which .ci/run calls
// where the env exists. HEADSPACE_PEERS_PYTHON names its python; without
// it they fail, they do not skip.

package realpeer

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
)

func envRunner(t *testing.T) Runner {
	t.Helper()
	py := os.Getenv(PythonEnv)
	if py == "" {
		t.Fatalf("%s is not set: run these tests with make test-peers (after make peers-env)", PythonEnv)
	}
	return Runner{Python: py, Dir: filepath.Join("..", "..", ScriptDir)}
}

// TestScriptsProbe: every peer's --check imports its packages and prints
// their versions.
func TestScriptsProbe(t *testing.T) {
	r := envRunner(t)
	want := map[string]string{"torch2": "torch2-torch", "spdl": "spdl-spdl", "nodes-threads": "nodes-threads-torchdata",
		"nodes-procs": "nodes-procs-torchdata", "dali": "dali-nvidia-dali", "tfdata": "tfdata-tensorflow",
		"s3map": "s3map-s3torchconnector", "s3iter": "s3iter-s3torchconnector"}
	for _, p := range Peers {
		o, err := r.Probe(context.Background(), p)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		found := false
		for _, c := range o.Config {
			found = found || (c.Key == want[p.Name] && c.Value != "")
		}
		if !found {
			t.Errorf("%s --check printed %v, want a %s line", p.Name, o.Config, want[p.Name])
		}
	}
}

// TestScriptsSameJob: with the crop the whole image and one batch of every
// image, every peer's first batch has, channel by channel, the mean of
// ours (headspace's libjpeg-turbo decode and fast transform, mask ratio
// 0, computed here): the same decode, conversion, scale and layout. The
// peers decoding with libjpeg-turbo's default (torchvision, DALI) agree to
// 1e-4; SPDL (FFmpeg's decoder) and tf.data (its default fast integer
// DCT) to 0.005 of the 0..1 scale.
func TestScriptsSameJob(t *testing.T) {
	r := envRunner(t)
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	t.Setenv("HEADSPACE_PEER_STATS", "1")
	ctx := context.Background()
	const side, n = 64, 8
	src := datasets.Synthetic{Width: side, Height: side, Classes: 10, N: n, Seed: 3, Content: datasets.ContentNatural}
	f, err := WriteFolder(ctx, src, 90)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := oursMeans(t, filepath.Join(f.work, "files"), side, n)
	s := Settings{Data: f.Dir, Crop: side, Batch: n, Batches: 2, Seed: 1}
	local, _ := ParseNames("all") // the bucket peers: cmd/headspace's TestPeersBucketEndToEnd
	for _, p := range local {
		tol := 1e-4
		if p.Name == "spdl" || p.Name == "tfdata" {
			tol = 0.005
		}
		out, _, err := r.exec(ctx, p, s.args(2)...)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		o, err := ParseScript(bytes.NewReader(out), p.Name, false)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		var got []float64
		for _, c := range o.Config {
			if c.Key == p.Name+"-first-batch-mean" {
				for _, v := range strings.Split(c.Value, ",") {
					x, _ := strconv.ParseFloat(v, 64)
					got = append(got, x)
				}
			}
		}
		if len(got) != 3 {
			t.Errorf("%s printed no first-batch-mean line: %v", p.Name, o.Config)
			continue
		}
		for c := range 3 {
			if math.Abs(got[c]-want[c]) > tol {
				t.Errorf("%s: channel %d mean %.6f, ours %.6f (tolerance %g)", p.Name, c, got[c], want[c], tol)
			}
		}
		if o.Run.Peer != p.Name || o.Run.SamplesPerSec <= 0 || o.Run.Batches != 2 {
			t.Errorf("%s: run %+v", p.Name, o.Run)
		}
	}
}

// oursMeans is the mean of each channel of our transform of the n images
// of the dataset at dir (headspace's writer's), the crop the whole image.
func oursMeans(t *testing.T, dir string, side, n int) [3]float64 {
	t.Helper()
	ds, err := ondisk.OpenWith(dir, ondisk.Options{Decoder: ondisk.DecoderTurbo})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	tr, err := transforms.New(transforms.Fast, transforms.Config{Crop: side, MaskRatio: 0})
	if err != nil {
		t.Fatal(err)
	}
	var sum [3]float64
	img := datasets.NewSample(side, side)
	dst := make([]float32, 3*side*side)
	for i := range n {
		if err := ds.Fill(i, img); err != nil {
			t.Fatal(err)
		}
		rng := prng.New(1, uint64(i))
		if err := tr.Apply(dst, &img.Image, &rng); err != nil {
			t.Fatal(err)
		}
		for c := range 3 {
			for _, v := range dst[c*side*side : (c+1)*side*side] {
				sum[c] += float64(v)
			}
		}
	}
	for c := range sum {
		sum[c] /= float64(n * side * side)
	}
	t.Logf("ours: %s", fmt.Sprint(sum))
	return sum
}

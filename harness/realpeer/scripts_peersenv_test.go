//go:build peersenv

// The tests that run the real peers' scripts: they need the pinned peers
// env (make peers-env) and run from `make test-peers`, which .ci/run calls
// where the env exists. HEADSPACE_PEERS_PYTHON names its python; without
// it they fail, they do not skip.

package realpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/peer"
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
		"s3map": "s3map-s3torchconnector", "s3iter": "s3iter-s3torchconnector",
		"streaming": "streaming-streaming", "litdata": "litdata-litdata"}
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
	want := oursMeans(t, filepath.Join(f.work, "files"), side, indices(n))
	s := Settings{Data: f.Dir, Crop: side, Batch: n, Batches: 2, Seed: 1}
	local, _ := ParseNames("all") // the bucket peers: cmd/headspace's TestPeersBucketEndToEnd
	for _, p := range local {
		tol := 1e-4
		if p.Name == "spdl" || p.Name == "tfdata" {
			tol = 0.005
		}
		checkMeans(t, r, ctx, p, s, 2, want, tol)
	}
}

// TestScriptsSameJobBucket is TestScriptsSameJob for the peers that read
// a bucket: the same images uploaded to the pinned S3 server (as peer
// --peers all-bucket does), each peer's own format written by its
// --prepare; every bucket peer decodes with torchvision (1e-4). One
// worker, so that the first batch holds the first images in order.
// litdata reads the local server's plain http only with allow_http added
// to its obstore client options (peer_litdata.py).
func TestScriptsSameJobBucket(t *testing.T) {
	r := envRunner(t)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "") // StartRemote sets them for this process; restored after
	}
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
	// The first batch is the first half of the ImageFolder's order
	// (classes, then files, as a bucket lists them); the other half is the
	// second batch (s3torchconnector's datasets hold each object once).
	order := folderOrder(t, f)
	want := oursMeans(t, filepath.Join(f.work, "files"), side, order[:n/2])
	rb, err := peer.StartRemote(ctx, src, n, link.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	r.Env = rb.Env()
	s := Settings{Data: rb.URLs[peer.ImageFolder], Crop: side, Batch: n / 2, Batches: 2, Seed: 1}
	ps, _ := ParseNames("all-bucket")
	for _, p := range ps {
		if err := r.Prepare(ctx, p, s); err != nil {
			var re *RunError
			if errors.As(err, &re) {
				t.Logf("%s --prepare's stderr:\n%s", p.Name, re.Stderr)
			}
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		checkMeans(t, r, ctx, p, s, 1, want, 1e-4)
	}
}

// checkMeans runs p at workers and checks its first batch's channel
// means against want, to tol, and that its run was timed.
func checkMeans(t *testing.T, r Runner, ctx context.Context, p Peer, s Settings, workers int, want [3]float64, tol float64) {
	t.Helper()
	out, _, err := r.exec(ctx, p, s.args(workers)...)
	if err != nil {
		var re *RunError
		if errors.As(err, &re) {
			t.Logf("%s's stderr:\n%s", p.Name, re.Stderr)
		}
		t.Errorf("%s: %v", p.Name, err)
		return
	}
	o, err := ParseScript(bytes.NewReader(out), p.Name, false)
	if err != nil {
		t.Errorf("%s: %v", p.Name, err)
		return
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
		return
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

// oursMeans is the mean of each channel of our transform of the n images
// of the dataset at dir (headspace's writer's) with the given indices,
// the crop the whole image.
func oursMeans(t *testing.T, dir string, side int, idx []int) [3]float64 {
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
	for _, i := range idx {
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
		sum[c] /= float64(len(idx) * side * side)
	}
	t.Logf("ours: %s", fmt.Sprint(sum))
	return sum
}

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// folderOrder is the dataset's indices in f's ImageFolder order (class
// folders sorted, then file names), as an S3 listing of it returns them.
func folderOrder(t *testing.T, f *Folder) []int {
	t.Helper()
	ds, err := ondisk.Open(filepath.Join(f.work, "files"))
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	m := ds.Manifest()
	keys := make([]string, len(m.Files))
	for i, file := range m.Files {
		keys[i] = fmt.Sprintf("class-%02d/%s", m.Labels[i], filepath.Base(file.Name))
	}
	order := indices(len(keys))
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	return order
}

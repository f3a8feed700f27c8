package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pilPython is Debian's python3, which has PIL once make test's test-deps
// has installed python3-pil (TEST_DEBS). The fixtures need it: a test
// without it fails, it does not skip.
const pilPython = "/usr/bin/python3"

// fixtureScript writes the three kinds of dataset a user brings, as
// their usual writers do: an ImageFolder of JPEGs saved by PIL, a
// directory of JPEGs of mixed sizes, and WebDataset shards written by
// Python's tarfile (a .jpg and a .cls member per key, the webdataset
// library's layout), plus, in kind "bad", files that must fail.
const fixtureScript = `
import io, os, random, sys, tarfile
from PIL import Image, ImageDraw

kind, root = sys.argv[1], sys.argv[2]
rnd = random.Random(7)

def picture(w, h):
    img = Image.new("RGB", (w, h), (rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)))
    d = ImageDraw.Draw(img)
    for _ in range(12):
        x, y, r = rnd.randrange(w), rnd.randrange(h), rnd.randrange(2, max(3, w // 3))
        d.ellipse((x - r, y - r, x + r, y + r), fill=(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)))
    return img

def jpeg_bytes(img):
    b = io.BytesIO()
    img.save(b, "JPEG", quality=90)
    return b.getvalue()

if kind == "imagefolder":
    for c in ["cat", "dog", "eel"]:
        os.makedirs(os.path.join(root, c))
        for i in range(4):
            picture(40, 32).save(os.path.join(root, c, f"{c}{i}.jpg"), quality=90)
    picture(40, 32).save(os.path.join(root, "dog", "extra.png"))
    with open(os.path.join(root, "cat", "README.txt"), "w") as f:
        f.write("not an image\n")
elif kind == "mixed":
    sizes = [(40, 32), (40, 32), (64, 48), (20, 30), (33, 17), (40, 32), (128, 96), (40, 32)]
    for c in ["a", "b"]:
        os.makedirs(os.path.join(root, c))
    for i, (w, h) in enumerate(sizes):
        picture(w, h).save(os.path.join(root, "ab"[i % 2], f"img{i}.jpeg"), quality=85)
elif kind == "webdataset":
    os.makedirs(root)
    n = 0
    for s in range(3):
        with tarfile.open(os.path.join(root, f"train-{s:04d}.tar"), "w") as tf:
            for k in range(4):
                key = f"sample{n:05d}"
                for name, data in [(key + ".jpg", jpeg_bytes(picture(40, 32))), (key + ".cls", str(n % 5).encode())]:
                    ti = tarfile.TarInfo(name)
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
                n += 1
elif kind == "bad":
    for c in ["x", "y"]:
        os.makedirs(os.path.join(root, c))
        for i in range(3):
            picture(40, 32).save(os.path.join(root, c, f"{c}{i}.jpg"), quality=90)
    with open(os.path.join(root, "x", "broken.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    Image.new("RGB", (40, 32)).save(os.path.join(root, "y", "really-a-gif.png"), "GIF")
`

// fixture writes a dataset of kind under a new directory with PIL.
func fixture(t *testing.T, kind string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), kind)
	cmd := exec.Command(pilPython, "-c", fixtureScript, kind, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing the %s fixture with %s and PIL (make test-deps installs python3-pil): %v\n%s", kind, pilPython, err, out)
	}
	return dir
}

// treeSum is a digest of everything under dir: every entry's path, type,
// mode, size, modification time and content. Equal sums: the directory
// was not written.
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + fi.Mode().String() + "\x00" + fi.ModTime().String() + "\x00"))
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestLadderDataForeign is issue 23's done-when: ladder --data runs the
// levels none, encoded, raw and device on datasets headspace did not
// write, with both decoders, and leaves each directory byte-identical.
func TestLadderDataForeign(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	for _, tc := range []struct {
		kind, decoder string
		want          []string // in the result file
	}{
		{"imagefolder", "turbojpeg", []string{"data-format: imagefolder-jpeg+png", "samples: 13", "classes: 3", "raw-size: 40x32",
			"data-image-sizes: 1 distinct, smallest 40x32, largest 40x32; most common 40x32 100%", "decoder: turbojpeg libjpeg-turbo "}},
		{"mixed", "go", []string{"data-format: imagefolder-jpeg", "samples: 8", "raw-size: 40x32",
			"data-image-sizes: 5 distinct, smallest 33x17, largest 128x96; most common 40x32 50%,", "data-resize: bilinear to 40x32", "decoder: go"}},
		{"webdataset", "turbojpeg", []string{"data-format: webdataset-jpeg", "data-layout: 3-shards", "samples: 12", "classes: 5", "decoder: turbojpeg"}},
	} {
		t.Run(tc.kind+"/"+tc.decoder, func(t *testing.T) {
			dir := fixture(t, tc.kind)
			before := treeSum(t, dir)
			out := filepath.Join(t.TempDir(), "r.txt")
			code, stdout, stderr := runCLI("ladder", "--data", dir, "--decoder", tc.decoder, "--levels", "none,encoded,raw,device",
				"--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "2", "--count", "1", "--workers", "2", "--transforms", "fast", "--out", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, level := range []string{"none", "encoded", "raw", "device"} {
				if !strings.Contains(stdout, "  "+level+" ") {
					t.Errorf("output lacks level %s:\n%s", level, stdout)
				}
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range append(tc.want, "BenchmarkLadder/level=encoded/", "BenchmarkLadder/level=device/", "decode-ns/sample") {
				if !strings.Contains(string(b), want) {
					t.Errorf("result file lacks %q:\n%s", want, b)
				}
			}
			if after := treeSum(t, dir); after != before {
				t.Errorf("ladder --data wrote into %s", dir)
			}
		})
	}
}

// TestDatasetIndexForeign indexes an ImageFolder into the cache (never
// the directory), and a corrupt or unsupported file fails the run in one
// line naming it, unless --max-failures skips it.
func TestDatasetIndexForeign(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HEADSPACE_CACHE", cache)
	dir := fixture(t, "bad")
	before := treeSum(t, dir)
	code, stdout, stderr := runCLI("dataset", "index", dir)
	if code != 0 {
		t.Fatalf("index: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "imagefolder, 8 samples in 2 classes, jpeg, 2 unreadable") || !strings.Contains(stdout, filepath.Join(cache, "index")) {
		t.Errorf("index output: %q", stdout)
	}
	ents, err := os.ReadDir(filepath.Join(cache, "index"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("cache holds %v, %v; want one index", ents, err)
	}
	args := []string{"ladder", "--data", dir, "--levels", "none", "--crop", "16", "--batch", "4", "--step", "1ms", "--steps", "3", "--count", "1", "--workers", "1", "--transforms", "fast"}
	code, _, stderr = runCLI(args...)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!(strings.Contains(stderr, filepath.Join(dir, "x", "broken.jpg")) || strings.Contains(stderr, filepath.Join(dir, "y", "really-a-gif.png"))) {
		t.Errorf("a corrupt file: exit %d, stderr %q; want one line naming the file", code, stderr)
	}
	code, _, stderr = runCLI(append(args, "--max-failures", "16")...)
	if code != 0 {
		t.Errorf("--max-failures 16: exit %d: %s", code, stderr)
	}
	if after := treeSum(t, dir); after != before {
		t.Errorf("dataset index or ladder wrote into %s", dir)
	}
	if code, _, stderr := runCLI("dataset", "index", t.TempDir()); code != 2 || !strings.Contains(stderr, "not a dataset") {
		t.Errorf("index of an empty dir: exit %d, %q", code, stderr)
	}
}

// TestPeerOnDiskReadsForeign: the peer's reader (peers/torch/ondisk.py,
// PIL only, no torch) reads a dataset the user brings by headspace's
// index: the same samples, resized to the raw size headspace uses.
func TestPeerOnDiskReadsForeign(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HEADSPACE_CACHE", cache)
	for _, kind := range []string{"mixed", "webdataset"} {
		dir := fixture(t, kind)
		if code, _, stderr := runCLI("dataset", "index", dir); code != 0 {
			t.Fatalf("index: %s", stderr)
		}
		idx, err := filepath.Glob(filepath.Join(cache, "index", "*.json"))
		if err != nil || len(idx) == 0 {
			t.Fatalf("no index in the cache: %v", err)
		}
		var index string
		for _, p := range idx {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), `"dir":"`+dir+`"`) {
				index = p
			}
		}
		before := treeSum(t, dir)
		out, err := exec.Command(pilPython, filepath.Join("..", "..", "peers", "torch", "ondisk.py"), dir, "2", index, "40", "32").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: ondisk.py: %v\n%s", kind, err, out)
		}
		want := map[string]string{"mixed": "8 samples: fetch", "webdataset": "12 samples: fetch"}[kind]
		if !strings.Contains(string(out), want) {
			t.Errorf("%s: ondisk.py says %q, want %q", kind, out, want)
		}
		if treeSum(t, dir) != before {
			t.Errorf("ondisk.py wrote into %s", dir)
		}
	}
}

// TestLadderContentNatural: the synthetic fill draws dead leaves with
// --content natural, and the result file says so.
func TestLadderContentNatural(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.txt")
	code, _, stderr := runCLI("ladder", "--content", "natural", "--levels", "none,device", "--raw-size", "64", "--crop", "16", "--batch", "4",
		"--step", "1ms", "--steps", "2", "--count", "1", "--workers", "1", "--transforms", "fast", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "content: natural") {
		t.Errorf("result file lacks content: natural (%v)", err)
	}
	for _, args := range [][]string{{"ladder", "--content", "leaves"}, {"ladder", "--content", "natural", "--data", t.TempDir()}} {
		if code, _, stderr := runCLI(args...); code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
}

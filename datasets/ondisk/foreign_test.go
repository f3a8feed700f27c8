package ondisk

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disintegration/imaging"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
)

func encodeTest(t *testing.T, format string, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{byte(x*7) + seed, byte(y * 5), seed * 3, 255})
		}
	}
	var b bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 95})
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestForeignImageFolder(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b", "1.png"), encodeTest(t, "png", 24, 16, 1))
	writeFile(t, filepath.Join(dir, "a", "deep", "2.JPG"), encodeTest(t, "jpeg", 24, 16, 2))
	writeFile(t, filepath.Join(dir, "a", "3.jpeg"), encodeTest(t, "jpeg", 48, 20, 3))
	writeFile(t, filepath.Join(dir, "a", "notes.txt"), []byte("ignored"))
	writeFile(t, filepath.Join(dir, ".hidden", "4.jpg"), encodeTest(t, "jpeg", 24, 16, 4))
	writeFile(t, filepath.Join(dir, "b", "fake.jpg"), []byte("GIF89a-not-really"))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "b", "zero.jpg")); err != nil {
		t.Fatal(err)
	}
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if x.Kind != KindImageFolder || strings.Join(x.Classes, ",") != "a,b" || len(x.Samples) != 5 {
		t.Fatalf("index: kind %s, classes %v, %d samples; want imagefolder, a,b, 5", x.Kind, x.Classes, len(x.Samples))
	}
	want := map[string]struct {
		label int
		err   string
	}{
		"a/3.jpeg": {0, ""}, "a/deep/2.JPG": {0, ""}, "b/1.png": {1, ""},
		"b/fake.jpg": {1, "not a JPEG or PNG"}, "b/zero.jpg": {1, "not a regular file"},
	}
	for _, s := range x.Samples {
		name := x.Files[s.File]
		w, ok := want[name]
		if !ok || s.Label != w.label || (w.err == "") != (s.Error == "") || !strings.Contains(s.Error, w.err) {
			t.Errorf("%s: label %d, error %q; want %+v", name, s.Label, s.Error, w)
		}
	}
	if got := x.SizeSummary(); got != "2 distinct, smallest 24x16, largest 48x20; most common 24x16 67%, 48x20 33%" {
		t.Errorf("SizeSummary = %q", got)
	}
	// Read at the most common size: 48x20 is resized, the bad files fail
	// naming themselves, and MaxFailures skips them.
	d, err := OpenWith(dir, Options{MaxFailures: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if w, h := d.Shape(); w != 24 || h != 16 || d.Len() != 5 {
		t.Fatalf("shape %dx%d, len %d", w, h, d.Len())
	}
	s := datasets.NewSample(24, 16)
	for i, smp := range x.Samples {
		err := d.Fill(i, s)
		name := filepath.Join(dir, filepath.FromSlash(x.Files[smp.File]))
		if smp.Error != "" {
			if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "\n") {
				t.Errorf("sample %d (%s): %v, want one line naming the file", i, name, err)
			}
		} else if err != nil {
			t.Errorf("sample %d (%s): %v", i, name, err)
		}
	}
	skip, err := OpenWith(dir, Options{MaxFailures: 4}) // two bad files, met twice
	if err != nil {
		t.Fatal(err)
	}
	defer skip.Close()
	for i := range 5 {
		if err := skip.Fill(i, s); err != nil {
			t.Errorf("with MaxFailures 4, sample %d: %v", i, err)
		}
	}
}

// TestResizeRGBMatchesImaging compares the bilinear resize with imaging's
// (the correctness oracle): within a couple of levels on a smooth image.
func TestResizeRGBMatchesImaging(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			src.Set(x, y, color.NRGBA{byte(x * 4), byte(y * 5), byte(x + y), 255})
		}
	}
	rgb := make([]byte, 64*48*3)
	if err := ToRGB(rgb, src); err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{32, 24}, {100, 70}, {64, 48}, {17, 9}} {
		dst := make([]byte, sz[0]*sz[1]*3)
		resizeRGB(dst, sz[0], sz[1], rgb, 64, 48)
		want := make([]byte, len(dst))
		if err := ToRGB(want, imaging.Resize(src, sz[0], sz[1], imaging.Linear)); err != nil {
			t.Fatal(err)
		}
		var sum int
		for i := range dst {
			d := int(dst[i]) - int(want[i])
			sum += max(d, -d)
		}
		// imaging's Linear filter averages over the whole footprint when
		// shrinking; on a linear ramp both agree but at the borders.
		if mean := float64(sum) / float64(len(dst)); mean > 2.5 {
			t.Errorf("%dx%d: mean difference from imaging %.2f levels", sz[0], sz[1], mean)
		}
	}
}

func tarOf(t *testing.T, members ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i < len(members); i += 2 {
		data := members[i+1].([]byte)
		if err := tw.WriteHeader(&tar.Header{Name: members[i].(string), Size: int64(len(data)), Mode: 0o644, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return b.Bytes()
}

func TestForeignWebDataset(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	j := encodeTest(t, "jpeg", 20, 12, 1)
	writeFile(t, filepath.Join(dir, "s-0.tar"), tarOf(t,
		"k/000.jpg", j, "k/000.cls", []byte("3\n"),
		"k/001.png", encodeTest(t, "png", 20, 12, 2), "k/001.txt", []byte("zebra"),
		"k/002.json", []byte("{}"), "k/002.txt", []byte("caption only"), // no image: not a sample
		"k/003.seg.jpg", j, "k/003.cls", []byte("1"), // key k/003, ext seg.jpg: not an image member
		"k/004.jpeg", j, // no label
	))
	writeFile(t, filepath.Join(dir, "s-1.tar"), tarOf(t, "a.jpg", j, "a.cls", []byte("0"))[:700]) // truncated
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range x.Samples {
		got[s.Member] = x.Classes[max(s.Label, 0)] + "|" + s.Error
	}
	for member, want := range map[string]string{
		"k/000.jpg":  "3|",
		"k/001.png":  "zebra|",
		"k/004.jpeg": "|no .cls or .txt label",
	} {
		if g, ok := got[member]; !ok || !strings.HasPrefix(g, strings.Split(want, "|")[0]) || !strings.Contains(g, strings.Split(want, "|")[1]) {
			t.Errorf("member %s: %q, want %q (index %v)", member, g, want, got)
		}
	}
	if len(x.Samples) < 4 || len(x.Samples) > 5 {
		t.Errorf("%d samples: %v", len(x.Samples), got)
	}
	d, err := OpenWith(dir, Options{Decoder: DecoderTurbo})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := datasets.NewSample(20, 12)
	for i, smp := range x.Samples {
		err := d.Fill(i, s)
		if (smp.Error == "") != (err == nil) {
			t.Errorf("sample %d (%s, error %q): Fill %v", i, smp.Member, smp.Error, err)
		}
		if err != nil && !strings.Contains(err.Error(), "member "+smp.Member) {
			t.Errorf("sample %d: %v does not name the member", i, err)
		}
	}
}

// TestIndexCache: SaveIndex writes outside the dataset, LoadIndex uses it
// while the files are unchanged and rebuilds after a change; a cache
// inside the dataset is refused.
func TestIndexCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HEADSPACE_CACHE", cache)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c", "1.jpg"), encodeTest(t, "jpeg", 8, 8, 1))
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := SaveIndex(x)
	if err != nil || !strings.HasPrefix(p, cache) {
		t.Fatalf("SaveIndex: %s, %v", p, err)
	}
	memo.Lock()
	clear(memo.m)
	memo.Unlock()
	if _, cached, err := LoadIndex(context.Background(), dir); err != nil || !cached {
		t.Errorf("LoadIndex: cached %v, %v; want the cached index", cached, err)
	}
	writeFile(t, filepath.Join(dir, "c", "2.jpg"), encodeTest(t, "jpeg", 8, 8, 2))
	y, cached, err := LoadIndex(context.Background(), dir)
	if err != nil || cached || len(y.Samples) != 2 {
		t.Errorf("after a new file: cached %v, %d samples, %v; want a fresh index of 2", cached, len(y.Samples), err)
	}
	t.Setenv("HEADSPACE_CACHE", filepath.Join(dir, "cache"))
	if _, err := SaveIndex(y); err == nil || !strings.Contains(err.Error(), "never written") {
		t.Errorf("a cache inside the dataset: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); err == nil {
		t.Error("SaveIndex wrote into the dataset")
	}
}

func TestCheckUserImageLimits(t *testing.T) {
	// A PNG header claiming 100000×100000 pixels: refused before decoding.
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	data := b.Bytes()
	copy(data[16:24], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0})
	binary.BigEndian.PutUint32(data[29:33], crc32.ChecksumIEEE(data[12:29]))
	if _, _, _, err := checkUserImage(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a huge PNG header: %v", err)
	}
	if _, _, _, err := checkUserImage(strings.NewReader("plain text")); err == nil || !strings.Contains(err.Error(), "not a JPEG or PNG") {
		t.Errorf("text: %v", err)
	}
}

// TestForeignShardCutAtHeader is issue 32, item 9: a shard cut at a header
// boundary (head -c) indexes its members before the cut and one failing
// sample naming the shard, never a clean index that lost the rest; the
// failure is bad data (ErrCorrupt), and MaxFailures counts it.
func TestForeignShardCutAtHeader(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	j := encodeTest(t, "jpeg", 20, 12, 1)
	whole := tarOf(t, "a.jpg", j, "a.cls", []byte("0"), "b.jpg", j, "b.cls", []byte("1"), "c.jpg", j, "c.cls", []byte("2"))
	all, err := IndexShard(bytes.NewReader(whole))
	if err != nil || len(all) != 6 {
		t.Fatalf("the whole shard: %d members, %v", len(all), err)
	}
	cut := all[2].Offset - 512 // b.jpg's header: a and its label stay
	shard := filepath.Join(dir, "s.tar")
	writeFile(t, shard, whole[:cut])
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Samples) != 2 || x.Failed() != 1 {
		t.Fatalf("%d samples, %d unreadable; want a and one failing sample for the rest: %+v", len(x.Samples), x.Failed(), x.Samples)
	}
	bad := x.Samples[1]
	if where := x.Where(1); where != shard+" member (after a.cls)" || !strings.Contains(bad.Error, "no end-of-archive marker") {
		t.Errorf("the failing sample: %s: %s", where, bad.Error)
	}
	s := datasets.NewSample(20, 12)
	d, err := OpenWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Fill(1, s); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), shard) {
		t.Errorf("Fill of the cut: %v; want ErrCorrupt naming %s", err, shard)
	}
	skip, err := OpenWith(dir, Options{MaxFailures: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer skip.Close()
	if err := skip.Fill(1, s); err != nil || skip.Failures() != 1 {
		t.Errorf("MaxFailures 1: %v, %d failures counted", err, skip.Failures())
	}
}

// TestForeignNothingReadable is issue 32, item 13: a directory whose only
// shard is not a tar archive, or whose only image is corrupt, is bad
// input naming the file and what is wrong, not an index of no size.
func TestForeignNothingReadable(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	for _, tc := range []struct{ file, want string }{
		{"x.tar", "not a tar archive"},
		{"c/x.jpg", "bad header"},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, tc.file), []byte("\xff\xd8\xff\xe0 hello"))
		_, err := BuildIndex(context.Background(), dir)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Join(dir, tc.file)+": "+tc.want) {
			t.Errorf("%s: %v; want ErrCorrupt naming it: %s", tc.file, err, tc.want)
		}
	}
}

// TestImageFolderFollowsLinkedClasses is issue 32, item 10: class
// directories that are symbolic links are read, as torchvision's
// ImageFolder reads them (find_classes' is_dir() and make_dataset's
// os.walk(followlinks=True) follow links), and so are links to
// directories inside a class; a link back to a directory the walk is in
// is not followed again.
func TestImageFolderFollowsLinkedClasses(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	root := t.TempDir()
	dir := filepath.Join(root, "ds")
	for _, c := range []string{"ds/a", "ds/b", "elsewhere/c", "elsewhere/more"} {
		n := 5
		if c == "elsewhere/more" {
			n = 2
		}
		for i := range n {
			writeFile(t, filepath.Join(root, c, fmt.Sprintf("%d.jpg", i)), encodeTest(t, "jpeg", 8, 8, byte(i)))
		}
	}
	for link, target := range map[string]string{
		"ds/c":         "../elsewhere/c",       // a linked class: 5 images
		"ds/a/more":    "../../elsewhere/more", // a linked directory in a class: 2
		"ds/b/loop":    ".",                    // b itself
		"ds/a/dataset": "..",                   // the dataset: a loop through a
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range x.Samples {
		count[x.Classes[s.Label]]++
	}
	// Before issue 32: 10 samples in a and b (5 each).
	want := map[string]int{"a": 5 + 2, "b": 5, "c": 5}
	if fmt.Sprint(count) != fmt.Sprint(want) || strings.Join(x.Classes, ",") != "a,b,c" {
		t.Errorf("classes %v, samples per class %v; want %v", x.Classes, count, want)
	}
}

// TestImageFolderOfLinkedClassesOnly: an ImageFolder whose every class
// folder is a symbolic link (a dataset assembled from folders elsewhere)
// is an ImageFolder, not "not a dataset" (issue 41): the links were
// followed only beside a real folder.
func TestImageFolderOfLinkedClassesOnly(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	root := t.TempDir()
	dir := filepath.Join(root, "ds")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"cat", "dog"} {
		for i := range 3 {
			writeFile(t, filepath.Join(root, "elsewhere", c, fmt.Sprintf("%d.jpg", i)), encodeTest(t, "jpeg", 8, 8, byte(i)))
		}
		if err := os.Symlink(filepath.Join("..", "elsewhere", c), filepath.Join(dir, c)); err != nil {
			t.Fatal(err)
		}
	}
	// A link to a file and a dangling link are not classes.
	writeFile(t, filepath.Join(root, "notes.txt"), []byte("x"))
	for link, target := range map[string]string{"notes": "../notes.txt", "gone": "../missing"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if kind, err := DetectKind(dir); kind != KindImageFolder || err != nil {
		t.Fatalf("DetectKind = %q, %v; want %q", kind, err, KindImageFolder)
	}
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range x.Samples {
		count[x.Classes[s.Label]]++
	}
	if want := map[string]int{"cat": 3, "dog": 3}; fmt.Sprint(count) != fmt.Sprint(want) || strings.Join(x.Classes, ",") != "cat,dog" {
		t.Errorf("classes %v, samples per class %v; want %v", x.Classes, count, want)
	}
	only := filepath.Join(root, "files-only")
	if err := os.Mkdir(only, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../notes.txt", filepath.Join(only, "notes")); err != nil {
		t.Fatal(err)
	}
	if _, err := DetectKind(only); err == nil || !strings.Contains(err.Error(), "not a dataset") {
		t.Errorf("a folder of a link to a file: DetectKind error %v, want not a dataset", err)
	}
}

// TestForeignUnreadableFilesAreSamples is issue 32, item 11: a dangling
// symbolic link and a named pipe called x.jpg are samples that fail,
// naming themselves, as a file without read permission is (its test,
// which needs a user other than root, is cmd/headspace's
// TestUnreadableFileCounted): the index lists them, the page-cache
// warm-up and eviction skip them, and MaxFailures counts them.
func TestForeignUnreadableFilesAreSamples(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	for i := range 3 {
		writeFile(t, filepath.Join(dir, "c", fmt.Sprintf("%d.jpg", i)), encodeTest(t, "jpeg", 8, 8, byte(i)))
	}
	if err := os.Symlink("missing.jpg", filepath.Join(dir, "c", "dangling.jpg")); err != nil {
		t.Fatal(err)
	}
	special := []string{"dangling.jpg"}
	if err := mkfifo(filepath.Join(dir, "c", "pipe.jpg")); err == nil {
		special = append(special, "pipe.jpg")
	}
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Samples) != 3+len(special) || x.Failed() != len(special) {
		t.Fatalf("%d samples, %d unreadable; want %d and %d", len(x.Samples), x.Failed(), 3+len(special), len(special))
	}
	st, err := Warm(context.Background(), dir)
	if err != nil || st.Files != 3 || st.Skipped != len(special) {
		t.Errorf("Warm: %+v, %v; want 3 files read, %d skipped", st, err, len(special))
	}
	if EvictAvailable {
		if st, err := Evict(context.Background(), dir); err != nil || st.Files != 3 || st.Skipped != len(special) {
			t.Errorf("Evict: %+v, %v; want 3 files, %d skipped", st, err, len(special))
		}
		if _, _, err := Resident(dir); err != nil {
			t.Errorf("Resident: %v", err)
		}
	}
	// The m failing samples sort last: Fill of the first meets all m,
	// of the next m-1, …: m(m+1)/2 failures, each counted.
	m := len(special)
	d, err := OpenWith(dir, Options{MaxFailures: m * (m + 1) / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := datasets.NewSample(8, 8)
	for i := range d.Len() {
		if err := d.Fill(i, s); err != nil {
			t.Errorf("sample %d (%s): %v", i, x.Files[x.Samples[i].File], err)
		}
	}
	if d.Failures() != int64(m*(m+1)/2) {
		t.Errorf("%d failures counted, want %d", d.Failures(), m*(m+1)/2)
	}
	strict, err := OpenWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	for i, smp := range x.Samples {
		name := filepath.Join(dir, filepath.FromSlash(x.Files[smp.File]))
		if err := strict.Fill(i, s); (smp.Error != "") != (err != nil) || err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name)) {
			t.Errorf("sample %d (%s, %q): Fill %v; want ErrCorrupt naming it", i, name, smp.Error, err)
		}
	}
}

// cancelAfter is a context that is cancelled once its Err has been asked
// n times: it lets a test cancel a run in the middle of its work without
// timing.
type cancelAfter struct {
	context.Context
	n, asked int
}

func (c *cancelAfter) Err() error {
	c.asked++
	if c.asked > c.n {
		return context.Canceled
	}
	return nil
}

// TestIndexStopsOnContext is issue 32, item 12: the listing and the header
// reads look at the context before every directory entry and file, so a
// cancelled context stops BuildIndex, LoadIndex (whose fingerprint check
// lists the directory again), InspectWith and the warm-up with
// context.Canceled, however many files the dataset holds.
func TestIndexStopsOnContext(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	const n = 40
	for i := range n {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("c%d", i%4), fmt.Sprintf("%d.jpg", i)), encodeTest(t, "jpeg", 8, 8, byte(i)))
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildIndex(done, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("BuildIndex, cancelled: %v", err)
	}
	// Cancelled in the middle of the listing: it stops there.
	for _, k := range []int{0, 1, n / 2} {
		ctx := &cancelAfter{Context: context.Background(), n: k}
		if _, err := BuildIndex(ctx, dir); !errors.Is(err, context.Canceled) || ctx.asked != k+1 {
			t.Errorf("cancelled after %d looks: %v after %d looks; want context.Canceled at look %d", k, err, ctx.asked, k+1)
		}
	}
	// Every directory entry and every header read is looked at: a run
	// that is never cancelled asks once per entry listed (4 classes, n
	// files) and once per header.
	ctx := &cancelAfter{Context: context.Background(), n: 1 << 30}
	if _, err := BuildIndex(ctx, dir); err != nil || ctx.asked < 4+2*n {
		t.Errorf("BuildIndex asked the context %d times for %d files (%v); want at least %d", ctx.asked, n, err, 4+2*n)
	}
	if _, _, err := LoadIndex(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadIndex(done, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("LoadIndex of a known directory, cancelled: %v", err)
	}
	if _, err := InspectWith(done, dir, bucket.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("InspectWith, cancelled: %v", err)
	}
	if _, err := Warm(done, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("Warm, cancelled: %v", err)
	}
	if _, err := OpenContext(done, dir, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenContext, cancelled: %v", err)
	}
}

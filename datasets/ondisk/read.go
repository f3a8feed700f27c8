package ondisk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
)

// Options are the reader's settings.
type Options struct {
	// MaxFailures is how many samples Fill may skip: a sample that cannot
	// be fetched or decoded is counted (Failures) and replaced by the next
	// sample that can, so batches keep their size, as SPDL's pipelines
	// allow. Beyond MaxFailures, or with 0, Fill returns the error.
	MaxFailures int
	// Decoder decodes the JPEGs: DecoderGo ("" too), Go's image/jpeg, or
	// DecoderTurbo, libjpeg-turbo through package turbojpeg, which
	// OpenWith loads (failing, in one line naming the Debian package,
	// where it is missing). PNG is always Go's image/png.
	Decoder string
	// Width and Height are the raw shape a dataset the user brings
	// (ImageFolder, WebDataset) is read at: an image of another size is
	// resized to it (bilinear, aspect ratio not kept, as torchvision's
	// Resize((h, w))). 0 means the most common size in the dataset. A
	// headspace dataset's shape is its manifest's; these must be 0 or
	// equal to it.
	Width, Height int
	// DecodeMinSide, when positive, decodes each JPEG at a reduced scale:
	// with DecoderTurbo, at the smallest TurboJPEG scaling factor
	// (turbojpeg.Fit) whose output is still at least DecodeMinSide on
	// each side — the random crop's side, so the crop can still be drawn.
	// Decode then gives a smaller image than Shape (DecodedShape), and
	// the transforms run on it: the crop is drawn from a downscaled image,
	// a different sample distribution from RandomCrop on the full image,
	// a remedy the user opts into as they would store smaller raw images.
	// A dataset the user brings is resized to the scaled raw size
	// instead, each JPEG decoded at the smallest factor that still covers
	// it (a PNG at full size). It needs DecoderTurbo and JPEGs (a
	// headspace dataset of PNG or raw is refused); 0 decodes at full size.
	DecodeMinSide int
	// Bucket is how a dataset at an s3:// URL is read: the endpoint,
	// requests in flight, chunk size, retries (package bucket).
	Bucket bucket.Options
	// ShardReads is how a member of a shard in a bucket is fetched:
	// ShardReadsRanged ("" too), a ranged GET each, or ShardReadsWhole,
	// the shard fetched whole once and its members served from memory.
	ShardReads string
}

// The values of loader.Config.DecodeScale and of --decode-scale: off
// (decode at full size) or auto (Options.DecodeMinSide set to the crop).
const (
	DecodeScaleOff  = "off"
	DecodeScaleAuto = "auto"
)

// DecodeScaleFor is the scaled decode of a w×h JPEG that keeps room for
// a minSide crop: TurboJPEG's factor (turbojpeg.Fit, which loads the
// library to ask) and the decoded size. OpenWith and the result files'
// settings both ask it, so they agree.
func DecodeScaleFor(w, h, minSide int) (f turbojpeg.Factor, sw, sh int, err error) {
	l, err := turbojpeg.Load()
	if err != nil {
		return f, 0, 0, err
	}
	f, ok := l.Fit(w, h, minSide, minSide)
	if !ok {
		return f, 0, 0, fmt.Errorf("ondisk: no scaled decode of a %dx%d image holds a %d-pixel crop", w, h, minSide)
	}
	return f, f.Scaled(w), f.Scaled(h), nil
}

// The JPEG decoders of Options.Decoder. DecoderNvjpeg is not the
// reader's: the device decodes the files (nvJPEG, --decoder nvjpeg), and
// the reader decodes with Go's image/jpeg what the host must (the raw
// sample a level keeps).
const (
	DecoderGo     = "go"
	DecoderTurbo  = "turbojpeg"
	DecoderNvjpeg = "nvjpeg"
)

// HostDecoders lists the decoders that decode on the host: what the
// on-disk experiment and the peer compare.
var HostDecoders = []string{DecoderGo, DecoderTurbo}

// Decoders lists the JPEG decoders Options.Decoder accepts: HostDecoders
// and the device's.
var Decoders = append(slices.Clip(HostDecoders), DecoderNvjpeg)

// DecoderName describes decoder for a result file: "go", or "turbojpeg"
// with libjpeg-turbo's version ("turbojpeg libjpeg-turbo 2.1.5"); it
// loads the library to ask.
func DecoderName(decoder string) (string, error) {
	switch decoder {
	case "", DecoderGo:
		return DecoderGo, nil
	case DecoderNvjpeg:
		return DecoderNvjpeg, nil // the library's version is the device's to tell
	case DecoderTurbo:
		l, err := turbojpeg.Load()
		if err != nil {
			return "", err
		}
		return DecoderTurbo + " " + l.String(), nil
	}
	return "", fmt.Errorf("ondisk: decoder %q: want go, turbojpeg or nvjpeg", decoder)
}

// Dataset reads a dataset written by Write. It implements datasets.Dataset
// and datasets.Encoded, and is safe for concurrent use. Close it to release
// the shard files.
type Dataset struct {
	dir      string
	m        *Manifest
	opts     Options
	shards   []*os.File
	shardErr []error    // why a shard could not be opened or fully indexed
	loc      []location // shards layout: where sample i's image member lies
	failures atomic.Int64
	readers  sync.Pool // *bytes.Reader
	bufs     sync.Pool // *[]byte for Fill
	turbo    *turbojpeg.Library
	tjFree   decoderList
	foreign  *Index // a dataset the user brings; nil for headspace's
	// A dataset in a bucket (OpenRemote): its client, how it was listed,
	// and every object's listed size; nil for a local one.
	remote     *bucket.Client
	remoteInfo *Remote
	sizes      map[string]int64
	etags      map[string]string // a remote dataset's listed ETags
	whole      *wholeShards      // Options.ShardReads whole; nil otherwise
	scratch    sync.Pool         // *[]byte: a foreign image at its own size
	// Options.DecodeMinSide: the factor every JPEG is decoded at and the
	// decoded size (scale is the zero Factor without it).
	scale   turbojpeg.Factor
	scaledW int
	scaledH int
}

// decoderList is a free list of TurboJPEG decoders, one per goroutine
// decoding at once. Not a sync.Pool: a dropped handle would leak its C
// memory, and a new one costs an allocation.
type decoderList struct {
	mu   sync.Mutex
	free []*turbojpeg.Decoder
}

func (l *decoderList) get(lib *turbojpeg.Library) (*turbojpeg.Decoder, error) {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		d := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return d, nil
	}
	l.mu.Unlock()
	return lib.NewDecoder()
}

func (l *decoderList) put(d *turbojpeg.Decoder) {
	l.mu.Lock()
	l.free = append(l.free, d)
	l.mu.Unlock()
}

func (l *decoderList) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.free {
		d.Close()
	}
	l.free = nil
}

type location struct {
	shard     int32
	off, size int64
}

var (
	_ datasets.Dataset = (*Dataset)(nil)
	_ datasets.Encoded = (*Dataset)(nil)
)

// Open opens the dataset in dir with default Options.
func Open(dir string) (*Dataset, error) { return OpenWith(dir, Options{}) }

// OpenWith opens the dataset in dir: it reads the manifest and, in the
// shards layout, opens every shard and indexes its members once by reading
// the tar headers. A directory without a manifest is read as an
// ImageFolder or WebDataset shards (LoadIndex). A shard that is missing
// or whose headers are corrupt does not fail Open; the samples it cannot
// provide fail at Fetch, naming the shard, so MaxFailures can skip them.
func OpenWith(dir string, opts Options) (*Dataset, error) {
	return OpenContext(context.Background(), dir, opts)
}

// OpenContext is OpenWith with a context: the listing and indexing of a
// dataset the user brings (which may take seconds over 100 000 files), or
// of one in a bucket, stop when ctx is done, with its error.
func OpenContext(ctx context.Context, dir string, opts Options) (*Dataset, error) {
	turbo, err := opts.check()
	if err != nil {
		return nil, err
	}
	if bucket.IsURL(dir) {
		meta, err := openRemoteURL(ctx, dir, opts.Bucket)
		if err != nil {
			return nil, err
		}
		return meta.dataset(opts, turbo)
	}
	dir = ResolveDir(dir)
	kind, err := DetectKind(dir)
	if err != nil {
		return nil, err
	}
	if kind != "headspace" {
		x, _, err := LoadIndex(ctx, dir)
		if err != nil {
			return nil, err
		}
		return openIndexed(dir, x, opts, turbo)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	return openManifest(dir, m, opts, turbo)
}

// openManifest opens the headspace dataset in dir (symbolic links
// resolved) whose manifest is m: in the shards layout, every shard opened
// and its members indexed.
func openManifest(dir string, m *Manifest, opts Options, turbo *turbojpeg.Library) (*Dataset, error) {
	d, err := manifestDataset(dir, m, opts, turbo)
	if err != nil || m.Layout != "shards" {
		return d, err
	}
	d.loc, d.shardErr = newLocations(m)
	d.shards = make([]*os.File, len(d.shardErr))
	for s := range d.shards {
		f, err := OpenRegular(filepath.Join(dir, m.Files[s].Name))
		if err != nil {
			d.shardErr[s] = err
			continue
		}
		d.shards[s] = f
		members, err := IndexShard(f)
		if err != nil {
			d.shardErr[s] = err
		}
		placeMembers(m, d.loc, s, members)
	}
	return d, nil
}

// check validates the options and loads TurboJPEG where they ask for it.
func (opts Options) check() (*turbojpeg.Library, error) {
	if opts.MaxFailures < 0 {
		return nil, fmt.Errorf("ondisk: MaxFailures %d must not be negative", opts.MaxFailures)
	}
	var turbo *turbojpeg.Library
	switch opts.Decoder {
	case "", DecoderGo, DecoderNvjpeg:
	case DecoderTurbo:
		var err error
		if turbo, err = turbojpeg.Load(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("ondisk: decoder %q: want go, turbojpeg or nvjpeg", opts.Decoder)
	}
	if opts.DecodeMinSide < 0 {
		return nil, fmt.Errorf("ondisk: DecodeMinSide %d must not be negative", opts.DecodeMinSide)
	}
	if opts.DecodeMinSide > 0 && turbo == nil {
		return nil, fmt.Errorf("ondisk: a scaled decode needs the %s decoder", DecoderTurbo)
	}
	return turbo, nil
}

// manifestDataset is the Dataset of a headspace dataset's manifest, read
// from dir (a directory or a bucket URL), before its shards are indexed.
func manifestDataset(dir string, m *Manifest, opts Options, turbo *turbojpeg.Library) (*Dataset, error) {
	if (opts.Width != 0 || opts.Height != 0) && (opts.Width != m.Width || opts.Height != m.Height) {
		return nil, fmt.Errorf("ondisk: %s holds %dx%d images; it cannot be read at %dx%d", dir, m.Width, m.Height, opts.Width, opts.Height)
	}
	return newDataset(dir, m, nil, opts, turbo)
}

// newDataset is the Dataset of manifest m, read from dir, of the user's
// dataset x (nil for headspace's), with Options.DecodeMinSide's scale,
// which needs JPEGs.
func newDataset(dir string, m *Manifest, x *Index, opts Options, turbo *turbojpeg.Library) (*Dataset, error) {
	d := &Dataset{dir: dir, m: m, opts: opts, turbo: turbo, foreign: x}
	if opts.DecodeMinSide > 0 {
		if !strings.Contains(m.Format, "jpeg") {
			return nil, fmt.Errorf("ondisk: %s holds %s images: a scaled decode needs JPEGs", dir, m.Format)
		}
		var err error
		if d.scale, d.scaledW, d.scaledH, err = DecodeScaleFor(m.Width, m.Height, opts.DecodeMinSide); err != nil {
			return nil, err
		}
	}
	d.readers.New = func() any { return bytes.NewReader(nil) }
	return d, nil
}

// newLocations is where each sample of m's shards lies, none placed yet
// (shard -1), and room for each shard's error.
func newLocations(m *Manifest) ([]location, []error) {
	loc := make([]location, m.Count)
	for i := range loc {
		loc[i].shard = -1
	}
	return loc, make([]error, m.Shards())
}

// placeMembers records in loc where shard s's members lie (the samples of
// the shard only; other names are ignored).
func placeMembers(m *Manifest, loc []location, s int, members []Member) {
	ext := "." + m.Ext()
	lo, hi := s*m.ShardSize, min((s+1)*m.ShardSize, m.Count)
	for _, mb := range members {
		key, ok := strings.CutSuffix(mb.Name, ext)
		if !ok {
			continue
		}
		i, ok := m.index(key)
		if !ok || i < lo || i >= hi {
			continue
		}
		loc[i] = location{shard: int32(s), off: mb.Offset, size: mb.Size}
	}
}

// index parses a sample key.
func (m *Manifest) index(key string) (int, bool) {
	if len(key) != m.keyWidth() {
		return 0, false
	}
	i := 0
	for _, c := range []byte(key) {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, i < m.Count
}

// Close closes the shard files and the TurboJPEG decoders.
func (d *Dataset) Close() error {
	d.tjFree.close()
	var errs []error
	for _, f := range d.shards {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// Dir is the dataset's directory.
func (d *Dataset) Dir() string { return d.dir }

// Manifest is the dataset's manifest; callers must not modify it.
func (d *Dataset) Manifest() *Manifest { return d.m }

// Len implements datasets.Dataset.
func (d *Dataset) Len() int { return d.m.Count }

// Shape implements datasets.Dataset.
func (d *Dataset) Shape() (int, int) { return d.m.Width, d.m.Height }

// DecodedShape is the size Decode gives: Shape, or with
// Options.DecodeMinSide the scaled size.
func (d *Dataset) DecodedShape() (int, int) {
	if d.scaledW > 0 {
		return d.scaledW, d.scaledH
	}
	return d.m.Width, d.m.Height
}

// DecodeScale is the factor Decode decodes at: turbojpeg.Full, or with
// Options.DecodeMinSide the scaled decode's.
func (d *Dataset) DecodeScale() turbojpeg.Factor {
	if d.scaledW > 0 {
		return d.scale
	}
	return turbojpeg.Full
}

// Failures is the number of samples Fill has skipped so far.
func (d *Dataset) Failures() int64 { return d.failures.Load() }

// where names sample i's file, object or shard member for errors.
func (d *Dataset) where(i int) string {
	x := d.foreign
	switch {
	case x != nil && d.remote == nil:
		return x.Where(i)
	case x != nil && x.Kind == KindWebDataset:
		return d.file(x.Files[x.Samples[i].File]) + " member " + x.Samples[i].Member
	case x != nil:
		return d.file(x.Files[x.Samples[i].File])
	case d.m.Layout == "shards":
		return fmt.Sprintf("%s member %s.%s", d.file(d.m.Files[i/d.m.ShardSize].Name), d.m.Key(i), d.m.Ext())
	}
	return d.file(d.m.Files[i].Name)
}

// file names the dataset's file rel: a path under its directory, or an
// object's URL.
func (d *Dataset) file(rel string) string {
	if d.remote != nil {
		return d.remote.Where(rel)
	}
	return filepath.Join(d.dir, rel)
}

// Fetch implements datasets.Encoded: it reads sample i's encoded bytes into
// buf (grown if needed) and returns them. In the shards layout it reads by
// offset (ReadAt) from the shard opened at Open, so workers fetch
// concurrently and allocate nothing; in the files layout it opens the file.
func (d *Dataset) Fetch(ctx context.Context, i int, buf []byte) ([]byte, error) {
	if i < 0 || i >= d.m.Count {
		return buf, fmt.Errorf("ondisk: fetch sample %d: out of range [0, %d)", i, d.m.Count)
	}
	if err := ctx.Err(); err != nil {
		return buf, fmt.Errorf("ondisk: fetch sample %d: %w", i, err)
	}
	if d.remote != nil {
		return d.fetchRemote(ctx, i, buf)
	}
	if d.foreign != nil {
		return d.fetchForeign(i, buf)
	}
	if d.m.Layout == "shards" {
		return d.fetchMember(i, buf)
	}
	return d.fetchFile(i, buf)
}

func (d *Dataset) fetchFile(i int, buf []byte) ([]byte, error) {
	want := d.m.Files[i].Size
	f, err := OpenRegular(filepath.Join(d.dir, d.m.Files[i].Name))
	if err != nil { // a file the manifest lists is missing or unreadable
		return buf, corruptf("ondisk: fetch sample %d: %w", i, err)
	}
	defer f.Close()
	buf, n, err := readAtMost(f, want, buf)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return buf[:n], corruptf("ondisk: fetch sample %d: %s: truncated: %d of %d bytes", i, d.where(i), n, want)
		}
		return buf[:n], corruptf("ondisk: fetch sample %d: %s: %w", i, d.where(i), err)
	}
	return buf, nil
}

func (d *Dataset) fetchMember(i int, buf []byte) ([]byte, error) {
	l, err := d.memberAt(i)
	if err != nil {
		return buf, err
	}
	if err := d.checkSize(i, l.size); err != nil {
		return buf[:0], err
	}
	return d.readMember(d.shards[l.shard], i, l.off, l.size, buf)
}

// memberAt is where shard member i lies, or why it is not there.
func (d *Dataset) memberAt(i int) (location, error) {
	l := d.loc[i]
	if l.shard >= 0 {
		return l, nil
	}
	why := "no such member"
	if err := d.shardErr[i/d.m.ShardSize]; err != nil {
		why = "shard unreadable: " + err.Error()
	}
	return l, corruptf("ondisk: fetch sample %d: %s: %s", i, d.where(i), why)
}

// checkSize refuses a sample of more than MaxSampleBytes before it is read.
func (d *Dataset) checkSize(i int, size int64) error {
	if size > MaxSampleBytes {
		return corruptf("ondisk: fetch sample %d: %s: %d bytes, more than a sample may hold (%d)", i, d.where(i), size, int64(MaxSampleBytes))
	}
	return nil
}

// readMember reads sample i's size bytes at off of the shard f into buf
// (grown if needed).
func (d *Dataset) readMember(f io.ReaderAt, i int, off, size int64, buf []byte) ([]byte, error) {
	buf = grow(buf, size)
	n, err := f.ReadAt(buf, off)
	if n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			return buf[:n], corruptf("ondisk: fetch sample %d: %s: truncated: %d of %d bytes", i, d.where(i), n, size)
		}
		return buf[:n], corruptf("ondisk: fetch sample %d: %s: %w", i, d.where(i), err)
	}
	return buf, nil
}

func grow(buf []byte, n int64) []byte {
	if int64(cap(buf)) < n {
		return make([]byte, n)
	}
	return buf[:n]
}

// Decode implements datasets.Encoded: it decodes sample i's bytes (from
// Fetch) into dst, whose image must have the dataset's shape. With
// Options.DecodeMinSide, dst's pixel buffer must have the capacity of the
// dataset's shape instead, and Decode sets dst's image to the smaller,
// decoded size (DecodedShape), keeping the buffer. Raw bytes are
// copied; PNG and JPEG are decoded by Go's image/png and image/jpeg and
// converted to interleaved RGB in dst without further allocation (the
// standard decoders allocate their own image per call). Safe for concurrent
// use with distinct dst.
func (d *Dataset) Decode(i int, data []byte, dst *datasets.Sample) error {
	w, h := d.m.Width, d.m.Height
	if i < 0 || i >= d.m.Count {
		return fmt.Errorf("ondisk: decode sample %d: out of range [0, %d)", i, d.m.Count)
	}
	if d.scaledW > 0 {
		if cap(dst.Image.Pix) < w*h*3 {
			return fmt.Errorf("ondisk: decode sample %d: buffer holds %d bytes, dataset is %dx%d", i, cap(dst.Image.Pix), w, h)
		}
		if d.foreign != nil { // decodeTurbo sets a headspace dataset's size itself
			sw, sh := d.scaledW, d.scaledH
			dst.Image.Width, dst.Image.Height, dst.Image.Pix = sw, sh, dst.Image.Pix[:3*sw*sh]
		}
	} else if dst.Image.Width != w || dst.Image.Height != h || len(dst.Image.Pix) != w*h*3 {
		return fmt.Errorf("ondisk: decode sample %d: buffer is %dx%d (%d bytes), dataset is %dx%d",
			i, dst.Image.Width, dst.Image.Height, len(dst.Image.Pix), w, h)
	}
	dst.Label = d.m.Labels[i]
	switch {
	case d.foreign != nil:
		return d.decodeForeign(i, data, dst)
	case d.m.Format == "raw":
		if len(data) != len(dst.Image.Pix) {
			return corruptf("ondisk: decode sample %d: %s: %d bytes, want %d (%dx%d RGB)", i, d.where(i), len(data), len(dst.Image.Pix), w, h)
		}
		copy(dst.Image.Pix, data)
		return nil
	case d.turbo != nil && d.m.Format == "jpeg": // always so with a scaled decode
		return d.decodeTurbo(i, data, dst)
	}
	return d.decodeStdlib(i, data, dst)
}

// decodeStdlib decodes sample i's PNG or JPEG with the standard library
// into dst. The header first (the guards' rule, guard.go): a file that
// claims more pixels than the dataset's is refused before it is decoded.
func (d *Dataset) decodeStdlib(i int, data []byte, dst *datasets.Sample) error {
	w, h := d.m.Width, d.m.Height
	decodeConfig, decode := jpeg.DecodeConfig, jpeg.Decode
	if d.m.Format == "png" {
		decodeConfig, decode = png.DecodeConfig, png.Decode
	}
	r := d.readers.Get().(*bytes.Reader)
	defer func() { r.Reset(nil); d.readers.Put(r) }()
	r.Reset(data)
	cfg, err := decodeConfig(r)
	if err == nil && (cfg.Width != w || cfg.Height != h) {
		return corruptf("ondisk: decode sample %d: %s: image header says %dx%d, dataset is %dx%d", i, d.where(i), cfg.Width, cfg.Height, w, h)
	}
	var img image.Image
	if err == nil {
		r.Reset(data)
		img, err = decode(r)
	}
	if err != nil {
		return corruptf("ondisk: decode sample %d: %s: %s: %w", i, d.where(i), d.m.Format, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		return corruptf("ondisk: decode sample %d: %s: image is %dx%d, dataset is %dx%d", i, d.where(i), b.Dx(), b.Dy(), w, h)
	}
	if err := ToRGB(dst.Image.Pix, img); err != nil {
		return corruptf("ondisk: decode sample %d: %s: %w", i, d.where(i), err)
	}
	return nil
}

// decodeTurbo decodes sample i's JPEG with TurboJPEG straight into dst,
// with Options.DecodeMinSide at the dataset's factor into dst's buffer,
// dst's image set to the decoded size: no allocation per sample.
func (d *Dataset) decodeTurbo(i int, data []byte, dst *datasets.Sample) error {
	dec, err := d.tjFree.get(d.turbo)
	if err != nil {
		return fmt.Errorf("ondisk: decode sample %d: %w", i, err)
	}
	defer d.tjFree.put(dec)
	if d.scaledW == 0 {
		err = dec.DecodeRGB(data, dst.Image.Pix, dst.Image.Width, dst.Image.Height)
	} else {
		pix := dst.Image.Pix[:cap(dst.Image.Pix)]
		var w, h int
		if w, h, err = dec.DecodeRGBScaled(data, pix, d.m.Width, d.m.Height, d.scale); err == nil {
			dst.Image.Width, dst.Image.Height, dst.Image.Pix = w, h, pix[:3*w*h]
		}
	}
	if err != nil {
		return corruptf("ondisk: decode sample %d: %s: jpeg: %w", i, d.where(i), err)
	}
	return nil
}

// DecodeCrop is Decode of only the crop c of sample i (the image at the
// dataset's shape): with DecoderTurbo, a JPEG of the shape is decoded by
// turbojpeg's DecodeCropRGB, the crop's rows and columns alone, its
// pixels those of the full decode's crop; another sample (a user's image
// of another size, resized to the shape, or a PNG) is decoded whole and
// cropped in place. dst's pixel buffer must have the capacity of the
// dataset's shape; DecodeCrop sets dst's image to c.W×c.H, keeping the
// buffer. It needs DecoderTurbo and no scaled decode (OpenWith's options).
func (d *Dataset) DecodeCrop(i int, data []byte, dst *datasets.Sample, c turbojpeg.Rect) error {
	w, h := d.m.Width, d.m.Height
	switch {
	case i < 0 || i >= d.m.Count:
		return fmt.Errorf("ondisk: decode sample %d: out of range [0, %d)", i, d.m.Count)
	case d.turbo == nil || d.scaledW > 0:
		return fmt.Errorf("ondisk: decode sample %d: a cropped decode needs the %s decoder at full scale", i, DecoderTurbo)
	case cap(dst.Image.Pix) < w*h*3:
		return fmt.Errorf("ondisk: decode sample %d: buffer holds %d bytes, dataset is %dx%d", i, cap(dst.Image.Pix), w, h)
	case c.X < 0 || c.Y < 0 || c.W <= 0 || c.H <= 0 || c.X+c.W > w || c.Y+c.H > h:
		return fmt.Errorf("ondisk: decode sample %d: crop %dx%d at (%d, %d) is not inside the %dx%d images", i, c.W, c.H, c.X, c.Y, w, h)
	}
	isJPEG := len(data) >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff
	if isJPEG && (d.foreign != nil || d.m.Format == "jpeg") {
		dec, err := d.tjFree.get(d.turbo)
		if err != nil {
			return fmt.Errorf("ondisk: decode sample %d: %w", i, err)
		}
		defer d.tjFree.put(dec)
		iw, ih, err := dec.Header(data)
		if err != nil {
			return d.decodeFail(i, err)
		}
		if iw == w && ih == h {
			dst.Label = d.m.Labels[i]
			pix := dst.Image.Pix[:3*c.W*c.H]
			if err := dec.DecodeCropRGB(data, pix, w, h, c); err != nil {
				return d.decodeFail(i, err)
			}
			dst.Image.Width, dst.Image.Height, dst.Image.Pix = c.W, c.H, pix
			return nil
		}
	}
	// Whole, then the crop's rows moved to the front of the buffer: each
	// row's new place lies at or before its old one.
	dst.Image.Width, dst.Image.Height, dst.Image.Pix = w, h, dst.Image.Pix[:3*w*h]
	if err := d.Decode(i, data, dst); err != nil {
		return err
	}
	row := 3 * c.W
	for y := range c.H {
		off := 3 * ((c.Y+y)*w + c.X)
		copy(dst.Image.Pix[y*row:(y+1)*row], dst.Image.Pix[off:off+row])
	}
	dst.Image.Width, dst.Image.Height, dst.Image.Pix = c.W, c.H, dst.Image.Pix[:row*c.H]
	return nil
}

// Decoder is the JPEG decoder the dataset uses, as DecoderName writes it.
func (d *Dataset) Decoder() string {
	if d.turbo != nil {
		return DecoderTurbo + " " + d.turbo.String()
	}
	return DecoderGo
}

// ToRGB writes img as interleaved 8-bit RGB into pix (len = 3·W·H). The
// decoders' types (*image.YCbCr, *image.RGBA, *image.NRGBA, *image.Gray)
// are converted without allocating; alpha is dropped (our images are
// opaque). Other types go through color.Model conversion, which allocates.
func ToRGB(pix []uint8, img image.Image) error {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if len(pix) != w*h*3 {
		return fmt.Errorf("RGB buffer is %d bytes, image is %dx%d", len(pix), w, h)
	}
	switch m := img.(type) {
	case *image.YCbCr:
		if ycbcrToRGB(pix, m) {
			return nil
		}
		for y := range h {
			yi := m.YOffset(b.Min.X, b.Min.Y+y)
			row := pix[y*w*3 : (y+1)*w*3]
			for x := range w {
				ci := m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bl := color.YCbCrToRGB(m.Y[yi+x], m.Cb[ci], m.Cr[ci])
				row[3*x], row[3*x+1], row[3*x+2] = r, g, bl
			}
		}
	case *image.RGBA:
		rgbaToRGB(pix, m.Pix, m.Stride, w, h)
	case *image.NRGBA:
		rgbaToRGB(pix, m.Pix, m.Stride, w, h)
	case *image.Gray:
		for y := range h {
			src := m.Pix[y*m.Stride : y*m.Stride+w]
			row := pix[y*w*3 : (y+1)*w*3]
			for x, v := range src {
				row[3*x], row[3*x+1], row[3*x+2] = v, v, v
			}
		}
	default:
		for y := range h {
			for x := range w {
				c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				o := (y*w + x) * 3
				pix[o], pix[o+1], pix[o+2] = c.R, c.G, c.B
			}
		}
	}
	return nil
}

// ycbcrToRGB is the YCbCr conversion for images at the origin with the
// subsampling ratios JPEG decoders give, with color.YCbCrToRGB's arithmetic
// inlined and the chroma terms computed once per chroma sample. It reports
// false for other images.
func ycbcrToRGB(pix []uint8, m *image.YCbCr) bool {
	var hs, vs int // horizontal and vertical chroma shifts
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
	case image.YCbCrSubsampleRatio422:
		hs = 1
	case image.YCbCrSubsampleRatio420:
		hs, vs = 1, 1
	case image.YCbCrSubsampleRatio440:
		vs = 1
	default:
		return false
	}
	if m.Rect.Min != (image.Point{}) {
		return false
	}
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := range h {
		yrow := m.Y[y*m.YStride : y*m.YStride+w]
		c0 := (y >> vs) * m.CStride
		cbrow := m.Cb[c0 : c0+((w-1)>>hs)+1]
		crrow := m.Cr[c0 : c0+((w-1)>>hs)+1]
		out := pix[y*w*3 : (y+1)*w*3]
		for x, yv := range yrow {
			cb1 := int32(cbrow[x>>hs]) - 128
			cr1 := int32(crrow[x>>hs]) - 128
			yy1 := int32(yv) * 0x10101
			r := yy1 + 91881*cr1
			g := yy1 - 22554*cb1 - 46802*cr1
			b := yy1 + 116130*cb1
			out[3*x] = clamp16(r)
			out[3*x+1] = clamp16(g)
			out[3*x+2] = clamp16(b)
		}
	}
	return true
}

// clamp16 is color.YCbCrToRGB's rounding: v>>16 clamped to [0, 255].
func clamp16(v int32) uint8 {
	if uint32(v)&0xff000000 == 0 {
		return uint8(v >> 16)
	}
	return uint8(^(v >> 31))
}

func rgbaToRGB(dst, src []uint8, stride, w, h int) {
	for y := range h {
		s := src[y*stride : y*stride+4*w]
		row := dst[y*w*3 : (y+1)*w*3]
		for x := range w {
			row[3*x], row[3*x+1], row[3*x+2] = s[4*x], s[4*x+1], s[4*x+2]
		}
	}
}

// Fill implements datasets.Dataset: Fetch then Decode, with a pooled read
// buffer. A sample that fails is skipped within Options.MaxFailures (see
// Options); otherwise Fill returns the error, which names the sample and
// its file or shard member.
func (d *Dataset) Fill(i int, dst *datasets.Sample) error {
	bp, _ := d.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer d.bufs.Put(bp)
	if i < 0 || i >= d.m.Count {
		return fmt.Errorf("ondisk: sample %d out of range [0, %d)", i, d.m.Count)
	}
	ctx := context.Background()
	var first error
	for tries := 0; tries < d.m.Count; tries++ {
		j := (i + tries) % d.m.Count
		data, err := d.Fetch(ctx, j, *bp)
		*bp = data[:cap(data)]
		if err == nil {
			err = d.Decode(j, data, dst)
		}
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		if d.failures.Add(1) > int64(d.opts.MaxFailures) {
			d.failures.Add(-1) // count only the skipped
			if tries == 0 {
				return err
			}
			return fmt.Errorf("%w (after skipping %d failed samples, the first: %v)", err, d.opts.MaxFailures, first)
		}
	}
	return first
}

// Verify reads every file of the dataset and checks its size and SHA-256
// against the manifest. It is not part of the hot path: run it once, before
// a measurement or after a suspect copy. Every failure is ErrCorrupt:
// the first file of the wrong size or content, or one that cannot be
// opened, stops it; files that are missing (an interrupted copy) are
// counted to the end and named, up to five.
func (d *Dataset) Verify(ctx context.Context) error {
	buf := make([]byte, 1<<20)
	var missing []string
	for _, fe := range d.m.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(d.dir, fe.Name)
		f, err := OpenRegular(path)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, fe.Name)
			continue
		}
		if err != nil {
			return corrupt(fmt.Errorf("ondisk: verify: %w", err))
		}
		h := sha256.New()
		n, err := io.CopyBuffer(h, io.LimitReader(f, fe.Size+1), buf)
		f.Close()
		if err != nil {
			return fmt.Errorf("ondisk: verify: %s: %w", path, err)
		}
		if n != fe.Size {
			return corruptf("ondisk: verify: %s: %d bytes, manifest says %d", path, n, fe.Size)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != fe.SHA256 {
			return corruptf("ondisk: verify: %s: sha256 %s, manifest says %s", path, got, fe.SHA256)
		}
	}
	if len(missing) > 0 {
		names := strings.Join(missing[:min(len(missing), 5)], ", ")
		if len(missing) > 5 {
			names += fmt.Sprintf(" and %d more", len(missing)-5)
		}
		return corruptf("ondisk: verify: %s: %d of the %d files its manifest lists are missing: %s", d.dir, len(missing), len(d.m.Files), names)
	}
	return nil
}

package ondisk

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// Bounds of the writer's parameters.
const (
	MaxSide    = 8192       // largest image width or height
	MaxCount   = 10_000_000 // most samples in one dataset
	MaxShard   = 1_000_000  // most samples in one shard
	MaxWorkers = 1024
)

// WriteOptions says how Write encodes and groups the samples.
type WriteOptions struct {
	Format    string // raw, png or jpeg
	Quality   int    // JPEG quality 1..100; 0 means DefaultQuality
	Layout    string // files or shards
	ShardSize int    // samples per shard; 0 means DefaultShardSize
	Workers   int    // encoders running at once; 0 means GOMAXPROCS
	// Force replaces a dataset already at the destination (only a
	// directory with a manifest: Write never replaces anything else).
	Force bool
	// Progress, if set, is called (from any worker) with the number of
	// samples just written.
	Progress func(samples int)
}

// Defaults of WriteOptions.
const (
	DefaultQuality   = 90
	DefaultShardSize = 1000
)

func (o *WriteOptions) normalize() error {
	if o.Quality == 0 {
		o.Quality = DefaultQuality
	}
	if o.ShardSize == 0 {
		o.ShardSize = DefaultShardSize
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case o.Format != "raw" && o.Format != "png" && o.Format != "jpeg":
		return fmt.Errorf("format %q: want raw, png or jpeg", o.Format)
	case o.Layout != "files" && o.Layout != "shards":
		return fmt.Errorf("layout %q: want files or shards", o.Layout)
	case o.Quality < 1 || o.Quality > 100:
		return fmt.Errorf("quality %d must be within 1..100", o.Quality)
	case o.ShardSize < 1 || o.ShardSize > MaxShard:
		return fmt.Errorf("shard size %d must be within 1..%d", o.ShardSize, MaxShard)
	case o.Workers < 1 || o.Workers > MaxWorkers:
		return fmt.Errorf("workers %d must be within 1..%d", o.Workers, MaxWorkers)
	}
	return nil
}

// Write writes every sample of src into dir in the given format and layout,
// with a manifest, and returns the manifest.
//
// It is atomic as a whole: the files are written and synced into a staging
// directory beside dir (dir + ".tmp-<pid>"), the manifest last, and the
// staging directory is renamed to dir only when everything is on disk. A
// write that fails, is cancelled or is killed leaves nothing at dir (a killed
// one leaves its staging directory, which has no manifest until the very end
// and is never taken for a dataset). dir must not exist, be an empty
// directory, or, with Force, hold a dataset (a manifest) that is replaced.
func Write(ctx context.Context, dir string, src datasets.Synthetic, o WriteOptions) (*Manifest, error) {
	if err := src.Validate(); err != nil {
		return nil, err
	}
	if src.Width > MaxSide || src.Height > MaxSide || src.N > MaxCount {
		return nil, fmt.Errorf("ondisk: %dx%d × %d samples: at most %dx%d and %d samples", src.Width, src.Height, src.N, MaxSide, MaxSide, MaxCount)
	}
	if err := o.normalize(); err != nil {
		return nil, fmt.Errorf("ondisk: %v", err)
	}
	// A link to a dataset is resolved once: --force replaces the dataset
	// it points to and the link stays a link.
	dir = ResolveDir(dir)
	replace, err := checkDestination(dir, o.Force)
	if err != nil {
		return nil, err
	}
	sweepStaging(dir)
	m, units := newManifest(src, o)
	stage := fmt.Sprintf("%s.tmp-%d", dir, os.Getpid())
	err = os.MkdirAll(filepath.Dir(dir), 0o755)
	if err == nil {
		err = os.RemoveAll(stage)
	}
	if err == nil {
		err = os.Mkdir(stage, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("ondisk: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(stage)
		}
	}()
	if err := writeUnits(ctx, stage, src, m, o, units); err != nil {
		return nil, staged(err, stage, dir)
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, fmt.Errorf("ondisk: manifest: %w", err)
	}
	if err := writeSynced(filepath.Join(stage, ManifestName), append(b, '\n')); err != nil {
		return nil, staged(err, stage, dir)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ondisk: write %s: %w", dir, err)
	}
	if err := install(stage, dir, replace); err != nil {
		return nil, staged(err, stage, dir)
	}
	ok = true
	return m, nil
}

// newManifest is the manifest of src written with o, its labels and
// files still to be filled, and the number of files (samples or shards).
func newManifest(src datasets.Synthetic, o WriteOptions) (*Manifest, int) {
	m := &Manifest{
		Version: FormatVersion, Count: src.N, Width: src.Width, Height: src.Height,
		Classes: src.Classes, Seed: src.Seed, Format: o.Format, Layout: o.Layout,
		Labels: make([]int, src.N),
	}
	if o.Format == "jpeg" {
		m.Quality = o.Quality
	}
	if src.Natural() {
		m.Content = datasets.ContentNatural
	}
	units := src.N
	if o.Layout == "shards" {
		m.ShardSize = o.ShardSize
		units = m.Shards()
	}
	m.Files = make([]File, units)
	return m, units
}

// ErrRefused is wrapped by the error Write returns when it will not write
// over its destination (not a directory, someone else's files, or a
// dataset without Force).
var ErrRefused = errors.New("refusing to write over it")

// checkDestination reports whether dir holds a dataset to replace, or why
// dir cannot be written.
func checkDestination(dir string, force bool) (replace bool, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ondisk: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("ondisk: %s exists and is not a directory: %w", dir, ErrRefused)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("ondisk: %w", err)
	}
	if len(ents) == 0 {
		return false, nil
	}
	if _, err := os.Lstat(filepath.Join(dir, ManifestName)); err != nil {
		return false, fmt.Errorf("ondisk: %s is not empty and holds no dataset (no %s): %w", dir, ManifestName, ErrRefused)
	}
	// A headspace manifest is recognised by its fields: version
	// FormatVersion, a sample format and layout of ours, every file
	// listed (Validate). Any other manifest.json is someone else's.
	if _, err := ReadManifest(dir); err != nil {
		return false, fmt.Errorf("ondisk: %s holds a %s that is not a headspace dataset's (%v): %w", dir, ManifestName, errors.Unwrap(err), ErrRefused)
	}
	if !force {
		return false, fmt.Errorf("ondisk: %s already holds a dataset (--force replaces it): %w", dir, ErrRefused)
	}
	return true, nil
}

// install renames stage to dir. An empty directory at dir is removed
// first; an old dataset is moved aside, and then only the files its
// manifest lists (and the manifest) are deleted: anything else a user
// put in the directory (notes, a subfolder) is moved into the new one,
// or, if the new dataset has a file of that name, kept in the old
// directory, which is then named in the error.
func install(stage, dir string, replace bool) error {
	var oldM *Manifest
	old := ""
	if _, err := os.Stat(dir); err == nil {
		if !replace { // an empty directory
			if err := os.Remove(dir); err != nil {
				return fmt.Errorf("ondisk: %w", err)
			}
		} else {
			if oldM, err = ReadManifest(dir); err != nil {
				return err
			}
			old = fmt.Sprintf("%s.old-%d", dir, os.Getpid())
			if err := os.Rename(dir, old); err != nil {
				return fmt.Errorf("ondisk: %w", err)
			}
		}
	}
	if err := os.Rename(stage, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return fmt.Errorf("ondisk: %w", err)
	}
	syncDir(filepath.Dir(dir))
	if old == "" {
		return nil
	}
	return clearOld(old, dir, oldM)
}

// clearOld removes the old dataset's files from old, where install moved
// it, and moves anything of the user's left there into the new dataset's
// folder dir; what cannot move is kept in old and named.
func clearOld(old, dir string, oldM *Manifest) error {
	listed := map[string]bool{ManifestName: true}
	for _, f := range oldM.Files {
		listed[filepath.FromSlash(f.Name)] = true
	}
	// Delete the listed files, deepest first (a listed name may sit in a
	// subdirectory, which goes once it is empty).
	var kept []string
	err := filepath.WalkDir(old, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == old {
			return err
		}
		rel, _ := filepath.Rel(old, p)
		if listed[rel] && !e.IsDir() {
			return os.Remove(p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ondisk: the new dataset is in place; removing the old one's files: %w", err)
	}
	removeEmptyDirs(old)
	ents, _ := os.ReadDir(old)
	for _, e := range ents {
		from, to := filepath.Join(old, e.Name()), filepath.Join(dir, e.Name())
		if _, err := os.Lstat(to); err == nil || os.Rename(from, to) != nil {
			kept = append(kept, e.Name())
		}
	}
	if len(kept) > 0 {
		return fmt.Errorf("ondisk: the new dataset is in place; files of yours that the old one held under names the new one uses are kept in %s: %v", old, kept)
	}
	return os.Remove(old)
}

// removeEmptyDirs removes the empty directories under root (not root).
func removeEmptyDirs(root string) {
	var dirs []string
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && p != root {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // fails, harmlessly, on one that is not empty
	}
}

// sweepStaging removes the staging (dir.tmp-PID) and set-aside
// (dir.old-PID) directories of writes to dir whose process is gone: left
// by a write killed with SIGKILL. A staging directory holds no manifest
// until its last moment, so it is never a dataset.
func sweepStaging(dir string) {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		var rest string
		var ok bool
		if rest, ok = strings.CutPrefix(e.Name(), base+".tmp-"); !ok {
			continue // an .old- directory may hold a user's files: kept
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || !e.IsDir() || pid == os.Getpid() || !atomicfile.ProcessGone(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(parent, e.Name()))
	}
}

// staged makes err, from writing into stage, name dir instead: the user
// asked for dir and has never heard of the staging directory.
func staged(err error, stage, dir string) error {
	if err == nil || !strings.Contains(err.Error(), stage) {
		return err
	}
	return stagedErr{err, stage, dir}
}

type stagedErr struct {
	err        error
	stage, dir string
}

func (s stagedErr) Error() string { return strings.ReplaceAll(s.err.Error(), s.stage, s.dir) }
func (s stagedErr) Unwrap() error { return s.err }

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // not supported everywhere (Windows); best effort
		d.Close()
	}
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("ondisk: %w", err)
	}
	return nil
}

// writeUnits runs o.Workers encoders over the units (samples or shards).
func writeUnits(ctx context.Context, stage string, src datasets.Synthetic, m *Manifest, o WriteOptions, units int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(o.Workers, units) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := newEncoder(src, m)
			for u := range jobs {
				var err error
				if m.Layout == "shards" {
					err = e.writeShard(ctx, stage, u, o.Progress)
				} else {
					err = e.writeFile(stage, u)
					if err == nil && o.Progress != nil {
						o.Progress(1)
					}
				}
				if err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for u := range units {
		select {
		case jobs <- u:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("ondisk: write %s: %w", m.Layout, err)
		}
		return err
	}
	return nil
}

// encoder holds one worker's buffers.
type encoder struct {
	src    datasets.Synthetic
	m      *Manifest
	sample *datasets.Sample
	rgba   *image.RGBA
	out    bytes.Buffer
	h      hash.Hash
	penc   png.Encoder
}

func newEncoder(src datasets.Synthetic, m *Manifest) *encoder {
	e := &encoder{src: src, m: m, sample: datasets.NewSample(src.Width, src.Height), h: sha256.New()}
	if m.Format != "raw" {
		e.rgba = image.NewRGBA(image.Rect(0, 0, src.Width, src.Height))
		e.penc.BufferPool = &onePool{}
	}
	return e
}

// onePool keeps the PNG encoder's buffers for the worker's next image.
type onePool struct{ b *png.EncoderBuffer }

func (p *onePool) Get() *png.EncoderBuffer  { return p.b }
func (p *onePool) Put(b *png.EncoderBuffer) { p.b = b }

// encode fills sample i and encodes it into e.out.
func (e *encoder) encode(i int) error {
	if err := e.src.Fill(i, e.sample); err != nil {
		return err
	}
	e.m.Labels[i] = e.sample.Label // each i is written by one worker
	e.out.Reset()
	pix := e.sample.Image.Pix
	if e.m.Format == "raw" {
		e.out.Write(pix)
		return nil
	}
	for p, q := 0, 0; p < len(pix); p, q = p+3, q+4 {
		e.rgba.Pix[q], e.rgba.Pix[q+1], e.rgba.Pix[q+2], e.rgba.Pix[q+3] = pix[p], pix[p+1], pix[p+2], 255
	}
	var err error
	if e.m.Format == "png" {
		err = e.penc.Encode(&e.out, e.rgba)
	} else {
		err = jpeg.Encode(&e.out, e.rgba, &jpeg.Options{Quality: e.m.Quality})
	}
	if err != nil {
		return fmt.Errorf("ondisk: encode sample %d as %s: %w", i, e.m.Format, err)
	}
	return nil
}

func (e *encoder) writeFile(stage string, i int) error {
	if err := e.encode(i); err != nil {
		return err
	}
	name := e.m.Key(i) + "." + e.m.Ext()
	if err := writeSynced(filepath.Join(stage, name), e.out.Bytes()); err != nil {
		return err
	}
	sum := sha256.Sum256(e.out.Bytes())
	e.m.Files[i] = File{Name: name, Size: int64(e.out.Len()), SHA256: hex.EncodeToString(sum[:])}
	return nil
}

// ShardName is shard s's file name.
func ShardName(s int) string { return fmt.Sprintf("shard-%06d.tar", s) }

// tarTime is every member's modification time, so a dataset's bytes depend
// only on its parameters.
var tarTime = time.Unix(0, 0)

func (e *encoder) writeShard(ctx context.Context, stage string, s int, progress func(int)) (err error) {
	name := ShardName(s)
	f, err := os.Create(filepath.Join(stage, name))
	if err != nil {
		return fmt.Errorf("ondisk: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("ondisk: %w", cerr)
		}
	}()
	e.h.Reset()
	cw := &countWriter{w: io.MultiWriter(f, e.h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	tw := tar.NewWriter(bw)
	lo, hi := s*e.m.ShardSize, min((s+1)*e.m.ShardSize, e.m.Count)
	for i := lo; i < hi; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.encode(i); err != nil {
			return err
		}
		key := e.m.Key(i)
		if err := writeMember(tw, key+"."+e.m.Ext(), e.out.Bytes()); err != nil {
			return fmt.Errorf("ondisk: %s: %w", name, err)
		}
		if err := writeMember(tw, key+".cls", strconv.AppendInt(nil, int64(e.sample.Label), 10)); err != nil {
			return fmt.Errorf("ondisk: %s: %w", name, err)
		}
		if progress != nil {
			progress(1)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("ondisk: %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ondisk: %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ondisk: %s: %w", name, err)
	}
	e.m.Files[s] = File{Name: name, Size: cw.n, SHA256: hex.EncodeToString(e.h.Sum(nil))}
	return nil
}

func writeMember(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o644, ModTime: tarTime, Format: tar.FormatUSTAR}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

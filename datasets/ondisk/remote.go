package ondisk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
)

// Remote is how a dataset in a bucket was listed and indexed: what a
// result file records beside the fetch counters, since listing is a cost
// users hit (DLIO's 50 million objects took over 12 hours).
type Remote struct {
	URL     string        // s3://BUCKET/PREFIX
	Objects int           // objects listed
	Bytes   int64         // their total size
	List    time.Duration // the listing's time
	Index   time.Duration // reading headers (ImageFolder, WebDataset, shards)
	// Fingerprint is the SHA-256 of every listed object's name, size and
	// ETag: a local copy is kept per listing.
	Fingerprint string
	// Cached says the listing was read from the cache (`headspace dataset
	// index s3://…` made it), not listed by this process; List and Index
	// are then the times it took when it was made.
	Cached bool
}

// headerBytes is how much of an image a remote index reads to find its
// size: one ranged GET that holds a JPEG's or PNG's header in practice; a
// header beyond it is read with a second, whole GET.
const headerBytes = 64 << 10

// OpenRemote opens the dataset under c's URL, in any of the layouts
// OpenWith reads from a directory: a headspace dataset (manifest.json,
// files or shards), an ImageFolder (one object per image, the first
// path element its class) or WebDataset shards (*.tar at the top). It
// lists the objects once and reads the headers it needs through c (the
// manifest, the shards' tar headers, each image's first headerBytes);
// Fetch then reads every sample from the bucket: a whole object for a
// file, a ranged GET for a member of a shard.
func OpenRemote(ctx context.Context, c *bucket.Client, opts Options) (*Dataset, error) {
	turbo, err := opts.check()
	if err != nil {
		return nil, err
	}
	meta, err := loadRemote(ctx, c)
	if err != nil {
		return nil, err
	}
	return meta.dataset(opts, turbo)
}

// remoteMeta is what listing and indexing a bucket's dataset found: all
// a Dataset needs besides its options.
type remoteMeta struct {
	c     *bucket.Client
	info  *Remote
	sizes map[string]int64
	etags map[string]string
	kind  string
	// A headspace dataset: its manifest and its bytes' SHA-256, and in the
	// shards layout where each member lies.
	m        *Manifest
	sum      string
	loc      []location
	shardErr []error
	x        *Index // an ImageFolder or WebDataset
}

// loadRemote lists and indexes the dataset under c's URL.
func loadRemote(ctx context.Context, c *bucket.Client) (*remoteMeta, error) {
	where := c.URL().String()
	t0 := time.Now()
	objs, err := c.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("ondisk: %w", err)
	}
	r := &Remote{URL: where, Objects: len(objs), List: time.Since(t0)}
	meta := &remoteMeta{c: c, info: r, sizes: make(map[string]int64, len(objs)), etags: make(map[string]string, len(objs))}
	h := sha256.New()
	for _, o := range objs {
		meta.sizes[o.Name] = o.Size
		meta.etags[o.Name] = o.ETag
		r.Bytes += o.Size
		fmt.Fprintf(h, "%q %d %s\n", o.Name, o.Size, o.ETag)
	}
	r.Fingerprint = hex.EncodeToString(h.Sum(nil))
	if meta.kind, err = remoteKind(where, objs); err != nil {
		return nil, err
	}
	open := remoteOpener(ctx, c, meta.sizes, meta.etags)
	t1 := time.Now()
	if meta.kind == "headspace" {
		err = meta.readManifest(ctx, open)
	} else {
		meta.x, err = remoteIndex(ctx, c, meta.kind, objs, open)
	}
	if err != nil {
		return nil, err
	}
	r.Index = time.Since(t1)
	return meta, nil
}

// dataset is a Dataset over the metadata, with opts.
func (meta *remoteMeta) dataset(opts Options, turbo *turbojpeg.Library) (*Dataset, error) {
	var d *Dataset
	var err error
	if meta.x != nil {
		d, err = foreignDataset(meta.x, opts, turbo)
	} else {
		d, err = manifestDataset(meta.info.URL, meta.m, opts, turbo)
	}
	if err != nil {
		return nil, err
	}
	d.loc, d.shardErr = meta.loc, meta.shardErr // a headspace dataset's shards
	d.remote, d.remoteInfo, d.sizes, d.etags = meta.c, meta.info, meta.sizes, meta.etags
	switch opts.ShardReads {
	case "", ShardReadsRanged:
	case ShardReadsWhole:
		d.whole = newWholeShards(d.Len(), func(i int) string {
			rel, _, _, whole, err := d.locate(i)
			if err != nil || whole {
				return ""
			}
			return rel
		})
	default:
		return nil, fmt.Errorf("ondisk: shard reads %q: want ranged or whole", opts.ShardReads)
	}
	return d, nil
}

// describe describes the dataset as InspectWith does, with what cannot be
// read counted and named (Info.Failed, Info.Unreadable): a missing or cut
// shard, a missing or resized file, an unreadable image. An upload cut
// short leaves exactly this, so it is said, never left for a run to find.
func (meta *remoteMeta) describe() *Info {
	m := meta.m
	if m == nil {
		in := indexInfo(meta.x, false)
		for i, s := range meta.x.Samples {
			if s.Error != "" {
				in.Unreadable = append(in.Unreadable, meta.x.Where(i)+": "+s.Error)
			}
		}
		return in
	}
	in := manifestInfo(m, meta.sum)
	where := meta.c.Where
	if m.Layout == "shards" {
		for s, err := range meta.shardErr {
			lost := 0
			for i := s * m.ShardSize; i < min(m.Count, (s+1)*m.ShardSize); i++ {
				if i < len(meta.loc) && meta.loc[i].shard < 0 {
					lost++
				}
			}
			in.Failed += lost
			switch {
			case err != nil:
				in.Unreadable = append(in.Unreadable, fmt.Sprintf("%s: %s (%d of its samples unreadable)", where(m.Files[s].Name), strings.TrimPrefix(err.Error(), where(m.Files[s].Name)+": "), lost))
			case lost > 0:
				in.Unreadable = append(in.Unreadable, fmt.Sprintf("%s: %d of its samples missing", where(m.Files[s].Name), lost))
			}
		}
		return in
	}
	for _, f := range m.Files {
		size, ok := meta.sizes[f.Name]
		switch {
		case !ok:
			in.Unreadable = append(in.Unreadable, where(f.Name)+": not in the listing")
		case size != f.Size:
			in.Unreadable = append(in.Unreadable, fmt.Sprintf("%s: %d bytes, the manifest says %d", where(f.Name), size, f.Size))
		default:
			continue
		}
		in.Failed++
	}
	return in
}

// remoteKind is detectKind for a listing: a manifest at the top, .tar
// objects at the top, or images one level down or deeper.
func remoteKind(where string, objs []bucket.Object) (string, error) {
	images := false
	for _, o := range objs {
		dir, base := path.Split(o.Name)
		if dir == "" && base == ManifestName {
			return "headspace", nil
		}
		if dir == "" && strings.EqualFold(path.Ext(base), ".tar") {
			return KindWebDataset, nil
		}
		if dir != "" && imageExt(base) && !hidden(o.Name) {
			images = true
		}
	}
	if images {
		return KindImageFolder, nil
	}
	return "", fmt.Errorf("ondisk: %s: not a dataset: no %s (headspace dataset write), no .tar shards (WebDataset), no images under class prefixes (ImageFolder) among its %d objects", where, ManifestName, len(objs))
}

// hidden reports whether any element of a slash-separated name starts with
// a dot: skipped, as torchvision and listFiles skip hidden entries.
func hidden(name string) bool {
	for _, e := range strings.Split(name, "/") {
		if strings.HasPrefix(e, ".") {
			return true
		}
	}
	return false
}

// readManifest reads a headspace dataset's manifest from the bucket and,
// in the shards layout, each shard's tar headers for the members' offsets
// (a shard that cannot be indexed fails its samples at Fetch, as on disk).
func (meta *remoteMeta) readManifest(ctx context.Context, open opener) error {
	c := meta.c
	size, ok := meta.sizes[ManifestName]
	if !ok || size > MaxManifestBytes {
		return fmt.Errorf("ondisk: %s: manifest of %d bytes, more than %d", c.Where(ManifestName), size, int64(MaxManifestBytes))
	}
	b, err := c.GetListed(ctx, bucket.Object{Name: ManifestName, Size: size, ETag: meta.etags[ManifestName]}, nil)
	if err != nil {
		return fmt.Errorf("ondisk: %w", err)
	}
	m, err := parseManifest(b, c.Where(ManifestName))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	meta.m, meta.sum = m, hex.EncodeToString(sum[:])
	if m.Layout != "shards" {
		return nil
	}
	meta.loc, meta.shardErr = newLocations(m)
	for s := range meta.shardErr {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, size, err := open(m.Files[s].Name, MaxUserFileBytes)
		if err != nil {
			meta.shardErr[s] = err
			continue
		}
		members, err := IndexShard(io.NewSectionReader(f, 0, size))
		f.Close()
		if err != nil {
			meta.shardErr[s] = err
		}
		placeMembers(m, meta.loc, s, members)
	}
	return nil
}

// remoteIndex indexes an ImageFolder or WebDataset in a bucket from its
// listing, as BuildIndex does from a directory: each image's header (its
// first headerBytes, Concurrency at a time) or each shard's tar headers.
func remoteIndex(ctx context.Context, c *bucket.Client, kind string, objs []bucket.Object, open opener) (*Index, error) {
	x := &Index{Version: IndexVersion, Dir: c.URL().String(), Kind: kind}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", kind)
	for _, o := range objs {
		if hidden(o.Name) {
			continue
		}
		dir, base := path.Split(o.Name)
		switch {
		case kind == KindWebDataset && dir == "" && strings.EqualFold(path.Ext(base), ".tar"):
		case kind == KindImageFolder && dir != "" && imageExt(base):
			if c := strings.SplitN(o.Name, "/", 2)[0]; !slices.Contains(x.Classes, c) {
				x.Classes = append(x.Classes, c)
			}
		default:
			continue
		}
		x.Files = append(x.Files, o.Name)
		fmt.Fprintf(h, "%q %d %s\n", o.Name, o.Size, o.ETag)
	}
	x.Fingerprint = hex.EncodeToString(h.Sum(nil))
	if kind == KindWebDataset {
		if err := indexShards(ctx, x, open); err != nil {
			return nil, err
		}
		if len(x.Samples) == 0 {
			return nil, fmt.Errorf("ondisk: %s: %s with no images (.jpg, .jpeg, .png)", x.Dir, kind)
		}
		return x, nil
	}
	sort.Strings(x.Classes)
	x.Samples = make([]IndexSample, len(x.Files))
	file := make(map[string]int, len(x.Files))
	for i, rel := range x.Files {
		file[rel] = i
	}
	// One header buffer a worker at a time, not one an image.
	bufs := sync.Pool{New: func() any { return new([headerBytes]byte) }}
	_, _, err := eachFile(ctx, c.Options().Concurrency, x.Files, func(ctx context.Context, rel string) (int64, error) {
		buf := bufs.Get().(*[headerBytes]byte)
		x.Samples[file[rel]] = remoteHeader(c, x, file[rel], open, buf[:])
		bufs.Put(buf)
		return 0, nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// remoteHeader reads ImageFolder image i's header: its first headerBytes,
// then, if the header lies beyond them, the whole image.
func remoteHeader(c *bucket.Client, x *Index, i int, open opener, buf []byte) IndexSample {
	rel := x.Files[i]
	f, size, err := open(rel, MaxUserImageBytes)
	s := IndexSample{File: i, Size: size, Label: slices.Index(x.Classes, strings.SplitN(rel, "/", 2)[0])}
	if err != nil {
		s.Error = strings.TrimPrefix(err.Error(), c.Where(rel)+": ")
		return s
	}
	defer f.Close()
	buf = buf[:min(size, headerBytes)]
	if _, err := f.ReadAt(buf, 0); err != nil {
		s.Error = err.Error()
		return s
	}
	s.Format, s.Width, s.Height, err = checkUserImage(bytes.NewReader(buf))
	if err != nil && int64(len(buf)) < size {
		s.Format, s.Width, s.Height, err = checkUserImage(io.NewSectionReader(f, 0, size))
	}
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

// remoteOpener opens the objects of a listing for reading at offsets:
// each ReadAt is a ranged GET, except that small reads (tar and image
// headers) are served from one block of readBlock bytes fetched at once.
func remoteOpener(ctx context.Context, c *bucket.Client, sizes map[string]int64, etags map[string]string) opener {
	return func(rel string, limit int64) (file, int64, error) {
		size, ok := sizes[rel]
		if !ok {
			return nil, 0, fmt.Errorf("%s: not in the listing", c.Where(rel))
		}
		if size > limit {
			return nil, 0, fmt.Errorf("%s: %d bytes, more than the %d a file may have", c.Where(rel), size, limit)
		}
		return &object{ctx: ctx, c: c, o: bucket.Object{Name: rel, Size: size, ETag: etags[rel]}, size: size}, size, nil
	}
}

// readBlock is what an object reads at once for a small read.
const readBlock = 256 << 10

// object is an object of a bucket read at offsets, with one cached block
// for the small sequential reads of indexing. It is safe for concurrent
// use.
type object struct {
	ctx   context.Context
	c     *bucket.Client
	o     bucket.Object // as listed
	size  int64
	mu    sync.Mutex
	block []byte
	at    int64 // block's offset
}

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), o.size-off))
	if n < readBlock/4 {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.block == nil || off < o.at || off+int64(n) > o.at+int64(len(o.block)) {
			m := min(int64(readBlock), o.size-off)
			o.block = slices.Grow(o.block[:0], int(m))[:m]
			if err := o.c.ReadListedAt(o.ctx, o.o, o.block, off); err != nil {
				o.block = nil
				return 0, err
			}
			o.at = off
		}
		copy(p[:n], o.block[off-o.at:])
	} else if err := o.c.ReadListedAt(o.ctx, o.o, p[:n], off); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (o *object) Close() error { return nil }

// fetchRemote reads sample i's bytes from the bucket: the whole object of
// a file, or the member's range of a shard.
func (d *Dataset) fetchRemote(ctx context.Context, i int, buf []byte) ([]byte, error) {
	rel, off, size, whole, err := d.locate(i)
	if err != nil {
		return buf, err
	}
	if err := d.checkSize(i, size); err != nil {
		return buf[:0], err
	}
	switch {
	case whole:
		buf, err = d.remote.GetListed(ctx, d.listed(rel), buf)
	case d.whole != nil:
		return d.member(ctx, i, rel, off, size, buf)
	default:
		buf = grow(buf, size)
		err = d.remote.ReadListedAt(ctx, d.listed(rel), buf, off)
	}
	if err != nil {
		return buf[:0], remoteFault(fmt.Errorf("ondisk: fetch sample %d: %w", i, err))
	}
	return buf, nil
}

// listed is the object rel as the listing found it: its size and ETag,
// which every read of it checks.
func (d *Dataset) listed(rel string) bucket.Object {
	return bucket.Object{Name: rel, Size: d.sizes[rel], ETag: d.etags[rel]}
}

// remoteFault makes err ErrCorrupt when it is the data's fault, as the
// same fault is on disk: an object deleted, shrunk, grown or replaced
// since the listing (bucket.ErrChanged). A network's or a server's
// failure stays what it is.
func remoteFault(err error) error {
	if errors.Is(err, bucket.ErrChanged) {
		return corrupt(err)
	}
	return err
}

// locate is where sample i's bytes lie: the file, and for a shard member
// its offset and size (whole is false).
func (d *Dataset) locate(i int) (rel string, off, size int64, whole bool, err error) {
	if x := d.foreign; x != nil {
		s := x.Samples[i]
		if s.Error != "" {
			return "", 0, 0, false, corruptf("ondisk: fetch sample %d: %s: %s", i, d.where(i), s.Error)
		}
		if x.Kind == KindWebDataset {
			return x.Files[s.File], s.Offset, s.Size, false, nil
		}
		return x.Files[s.File], 0, s.Size, true, nil
	}
	if d.m.Layout == "shards" {
		l, err := d.memberAt(i)
		if err != nil {
			return "", 0, 0, false, err
		}
		return d.m.Files[l.shard].Name, l.off, l.size, false, nil
	}
	name := d.m.Files[i].Name
	size, ok := d.sizes[name]
	if !ok {
		return "", 0, 0, false, corruptf("ondisk: fetch sample %d: %s: not in the listing", i, d.where(i))
	}
	if size != d.m.Files[i].Size {
		return "", 0, 0, false, corruptf("ondisk: fetch sample %d: %s: %d bytes, the manifest says %d", i, d.where(i), size, d.m.Files[i].Size)
	}
	return name, 0, size, true, nil
}

// RemoteInfo is how a dataset in a bucket was listed and indexed; nil for
// a local one.
func (d *Dataset) RemoteInfo() *Remote { return d.remoteInfo }

// Bucket is the client a remote dataset reads through; nil for a local
// one.
func (d *Dataset) Bucket() *bucket.Client { return d.remote }

// The remote datasets this process listed and indexed, by endpoint and
// URL: the commands' several looks at one bucket (InspectWith, the settings,
// each loader) list it once. A run that wants a fresh listing starts a
// new process, or runs `headspace dataset index` first.
var remoteMemo = struct {
	sync.Mutex
	m map[string]*remoteMeta
}{m: map[string]*remoteMeta{}}

// openRemoteURL opens the dataset at an s3:// URL with the bucket options
// of opts: its listing from the cache (IndexRemote), or listed once per
// process.
func openRemoteURL(ctx context.Context, u string, bo bucket.Options) (*remoteMeta, error) {
	url, err := bucket.ParseURL(u)
	if err != nil {
		return nil, err
	}
	c, err := bucket.Open(ctx, url, bo)
	if err != nil {
		return nil, err
	}
	key := c.Endpoint() + " " + url.String()
	remoteMemo.Lock()
	meta := remoteMemo.m[key]
	remoteMemo.Unlock()
	if meta != nil {
		// The same listing, through this client (its options and counters).
		cp := *meta
		cp.c = c
		return &cp, nil
	}
	if meta, err = loadCachedRemote(c); err != nil {
		return nil, err
	}
	if meta == nil {
		if meta, err = loadRemote(ctx, c); err != nil {
			return nil, err
		}
	}
	remoteMemo.Lock()
	remoteMemo.m[key] = meta
	remoteMemo.Unlock()
	return meta, nil
}

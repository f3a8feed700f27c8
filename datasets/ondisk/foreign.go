package ondisk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The kinds of dataset a user brings, read without a headspace manifest.
const (
	// KindImageFolder is torchvision's ImageFolder: one subdirectory per
	// class (labels are the sorted directory names' indices) holding
	// .jpg, .jpeg or .png files, at any depth below it.
	KindImageFolder = "imagefolder"
	// KindWebDataset is WebDataset tar shards (*.tar in the directory)
	// from any writer: members grouped by key (the member's path up to
	// the first dot of its base name), .jpg/.jpeg/.png the image, .cls
	// (an integer) or .txt (an integer or a class name) the label.
	KindWebDataset = "webdataset"
)

// IndexVersion is the format version of an Index file.
const IndexVersion = 1

// Index lists the samples of a dataset a user brings: where each image
// lies, its label, and its size and format from its header. It is built by
// BuildIndex, on the fly or once by `headspace dataset index` into the
// cache (IndexCacheDir), never into the user's directory.
type Index struct {
	Version int    `json:"version"`
	Dir     string `json:"dir"` // absolute
	Kind    string `json:"kind"`
	// Fingerprint is the SHA-256 of every listed file's name, size and
	// modification time: a cached index is used only while it matches.
	Fingerprint string   `json:"fingerprint"`
	Classes     []string `json:"classes"` // label i's name
	// Files are the image files (ImageFolder) or the shards (WebDataset),
	// slash-separated, relative to Dir.
	Files   []string      `json:"files"`
	Samples []IndexSample `json:"samples"`
}

// IndexSample is one sample of an Index.
type IndexSample struct {
	File int `json:"file"` // index into Files
	// Member, Offset and Size locate the image inside a shard (WebDataset
	// only); Size is the image's byte size in both kinds.
	Member string `json:"member,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Size   int64  `json:"size"`
	Label  int    `json:"label"`
	Format string `json:"format,omitempty"` // jpeg or png, from the header
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	// Error is why the sample cannot be read (a bad header, an unsupported
	// format, no label): reading it fails with this error, naming the
	// file, and --max-failures may skip it.
	Error string `json:"error,omitempty"`
}

// imageExt reports whether name has an image extension the readers take.
func imageExt(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".jpg", ".jpeg", ".png":
		return true
	}
	return false
}

// DetectKind says what dir holds: a headspace dataset ("headspace", with a
// manifest), WebDataset shards (*.tar at its top), or an ImageFolder
// (subdirectories), or why it is none of them.
func DetectKind(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
		return "headspace", nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	dirs := 0
	for _, e := range ents {
		if e.Type().IsRegular() && strings.EqualFold(path.Ext(e.Name()), ".tar") {
			return KindWebDataset, nil
		}
		if e.IsDir() {
			dirs++
		}
	}
	if dirs > 0 {
		return KindImageFolder, nil
	}
	return "", fmt.Errorf("ondisk: %s: not a dataset: no manifest (headspace dataset write), no class subdirectories (ImageFolder), no .tar shards (WebDataset)", dir)
}

// listed is a file of a user's dataset with what the fingerprint covers.
type listed struct {
	rel  string // slash-separated, relative to the dataset directory
	size int64
	mod  int64
}

// listFiles lists the files an index of dir covers, sorted: the image
// files of every class directory (ImageFolder) or the top-level shards.
// Symbolic links to directories are not followed; hidden entries are
// skipped, as torchvision does.
func listFiles(dir, kind string) (classes []string, files []listed, err error) {
	if kind == KindWebDataset {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("ondisk: %w", err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || !strings.EqualFold(path.Ext(e.Name()), ".tar") {
				continue
			}
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, nil, fmt.Errorf("ondisk: %w", err)
			}
			files = append(files, listed{e.Name(), fi.Size(), fi.ModTime().UnixNano()})
		}
		return nil, files, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("ondisk: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			classes = append(classes, e.Name())
		}
	}
	sort.Strings(classes)
	for _, c := range classes {
		err := filepath.WalkDir(filepath.Join(dir, c), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(e.Name(), ".") {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if e.IsDir() || !imageExt(e.Name()) {
				return nil
			}
			fi, err := os.Stat(p) // follows a link to a file; openUserFile checks it is regular
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, listed{filepath.ToSlash(rel), fi.Size(), fi.ModTime().UnixNano()})
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("ondisk: %w", err)
		}
	}
	return classes, files, nil
}

func fingerprint(kind string, files []listed) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", kind)
	for _, f := range files {
		fmt.Fprintf(h, "%q %d %d\n", f.rel, f.size, f.mod)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BuildIndex indexes the ImageFolder or WebDataset shards in dir, reading
// only headers: each image's header (checkUserImage), each shard's tar
// headers and label members. It never writes anything. A file it cannot
// read becomes a sample with an Error, or, for a shard, fails the index
// only when nothing of it could be indexed.
func BuildIndex(ctx context.Context, dir string) (*Index, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ondisk: %w", err)
	}
	kind, err := DetectKind(abs)
	if err != nil {
		return nil, err
	}
	if kind == "headspace" {
		return nil, fmt.Errorf("ondisk: %s holds a headspace dataset (%s): it needs no index", dir, ManifestName)
	}
	classes, files, err := listFiles(abs, kind)
	if err != nil {
		return nil, err
	}
	idx := &Index{Version: IndexVersion, Dir: abs, Kind: kind, Fingerprint: fingerprint(kind, files), Classes: classes}
	for _, f := range files {
		idx.Files = append(idx.Files, f.rel)
	}
	if kind == KindImageFolder {
		for i, f := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s := IndexSample{File: i, Size: f.size, Label: slices.Index(classes, strings.SplitN(f.rel, "/", 2)[0])}
			s.Format, s.Width, s.Height, s.Error = headerOfFile(filepath.Join(abs, filepath.FromSlash(f.rel)))
			idx.Samples = append(idx.Samples, s)
		}
	} else if err := indexShards(ctx, idx, localOpener(abs)); err != nil {
		return nil, err
	}
	if len(idx.Samples) == 0 {
		return nil, fmt.Errorf("ondisk: %s: %s with no images (.jpg, .jpeg, .png)", dir, kind)
	}
	return idx, nil
}

// file is a file of a dataset opened for reading at offsets.
type file interface {
	io.ReaderAt
	io.Closer
}

// opener opens the file rel (slash-separated, relative to the dataset) of
// at most limit bytes, and gives its size; its errors read "where: reason".
type opener func(rel string, limit int64) (file, int64, error)

// localOpener opens the files under dir through openUserFile.
func localOpener(dir string) opener {
	return func(rel string, limit int64) (file, int64, error) {
		return openUserFile(filepath.Join(dir, filepath.FromSlash(rel)), limit)
	}
}

// headerOfFile checks an image file's header; a failure is returned as
// the sample's error text.
func headerOfFile(p string) (format string, w, h int, why string) {
	f, _, err := openUserFile(p, MaxUserImageBytes)
	if err != nil {
		return "", 0, 0, strings.TrimPrefix(err.Error(), p+": ") // where() names the file
	}
	defer f.Close()
	format, w, h, err = checkUserImage(f)
	if err != nil {
		return "", 0, 0, err.Error()
	}
	return format, w, h, ""
}

// wdsKey splits a WebDataset member name into its key and extension, as
// webdataset does: the extension starts at the first dot of the base name.
func wdsKey(name string) (key, ext string) {
	dir, base := path.Split(name)
	i := strings.IndexByte(base, '.')
	if i < 0 {
		return name, ""
	}
	return dir + base[:i], strings.ToLower(base[i+1:])
}

// indexShards indexes idx's WebDataset shards, each opened by open: a
// local file (localOpener) or an object in a bucket (remoteOpener).
func indexShards(ctx context.Context, idx *Index, open opener) error {
	type pending struct {
		s        IndexSample
		hasImage bool
		label    string // the .cls or .txt text
		hasLabel bool
		labelErr string
	}
	var textLabels []string // class names met in .txt labels
	var samples []pending
	for fi, rel := range idx.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, size, err := open(rel, MaxUserFileBytes)
		if err != nil {
			return fmt.Errorf("ondisk: %w", err)
		}
		members, ierr := IndexShard(io.NewSectionReader(f, 0, size))
		byKey := map[string]int{} // key → position in samples, this shard
		for _, m := range members {
			key, ext := wdsKey(m.Name)
			k, ok := byKey[key]
			if !ok {
				k = len(samples)
				byKey[key] = k
				samples = append(samples, pending{s: IndexSample{File: fi, Member: key}})
			}
			ps := &samples[k]
			switch ext {
			case "jpg", "jpeg", "png":
				if ps.hasImage {
					continue // the first image member is the sample's
				}
				ps.hasImage = true
				ps.s.Member, ps.s.Offset, ps.s.Size = m.Name, m.Offset, m.Size
				if m.Size > MaxUserImageBytes {
					ps.s.Error = fmt.Sprintf("%d bytes, more than the %d an image may have", m.Size, MaxUserImageBytes)
					continue
				}
				format, w, h, err := checkUserImage(io.NewSectionReader(f, m.Offset, m.Size))
				if err != nil {
					ps.s.Error = err.Error()
				}
				ps.s.Format, ps.s.Width, ps.s.Height = format, w, h
			case "cls", "txt":
				if ps.hasLabel && ext == "txt" {
					continue // .cls wins
				}
				if m.Size > 4096 {
					ps.labelErr = fmt.Sprintf("label member %s: %d bytes, not a label", m.Name, m.Size)
					continue
				}
				b := make([]byte, m.Size)
				if _, err := f.ReadAt(b, m.Offset); err != nil {
					ps.labelErr = fmt.Sprintf("label member %s: %v", m.Name, err)
					continue
				}
				ps.label, ps.hasLabel, ps.labelErr = strings.TrimSpace(string(b)), true, ""
				if _, err := strconv.Atoi(ps.label); err != nil && !slices.Contains(textLabels, ps.label) {
					textLabels = append(textLabels, ps.label)
				}
			}
		}
		f.Close()
		if ierr != nil {
			// The rest of the shard cannot be indexed: one sample that
			// fails, naming the shard, so --max-failures decides.
			samples = append(samples, pending{s: IndexSample{File: fi, Member: "(after the last readable member)", Error: ierr.Error()}, hasImage: true, hasLabel: true, label: "0"})
		}
	}
	sort.Strings(textLabels)
	maxLabel := -1
	for _, ps := range samples {
		if !ps.hasImage {
			continue // a key with no image (a caption alone): not a sample
		}
		s := ps.s
		switch {
		case ps.labelErr != "" && s.Error == "":
			s.Error = ps.labelErr
		case !ps.hasLabel && s.Error == "":
			s.Error = "no .cls or .txt label member"
		case ps.hasLabel:
			if n, err := strconv.Atoi(ps.label); err == nil {
				if n < 0 || n > 1<<20 {
					if s.Error == "" {
						s.Error = fmt.Sprintf("label %d out of range", n)
					}
				} else {
					s.Label = n + len(textLabels) // class names take the first labels
				}
			} else {
				s.Label = slices.Index(textLabels, ps.label)
			}
		}
		maxLabel = max(maxLabel, s.Label)
		idx.Samples = append(idx.Samples, s)
	}
	idx.Classes = textLabels
	for len(idx.Classes) <= maxLabel {
		idx.Classes = append(idx.Classes, strconv.Itoa(len(idx.Classes)-len(textLabels)))
	}
	return nil
}

// IndexCacheDir is where `headspace dataset index` keeps indexes:
// $HEADSPACE_CACHE/index, or the user's cache directory's
// headspace/index (~/.cache/headspace/index on Linux).
func IndexCacheDir() (string, error) {
	if d := os.Getenv("HEADSPACE_CACHE"); d != "" {
		return filepath.Join(d, "index"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("ondisk: no cache directory for indexes: %w (set HEADSPACE_CACHE)", err)
	}
	return filepath.Join(d, "headspace", "index"), nil
}

// indexPath is where dir's index is cached.
func indexPath(abs string) (string, error) {
	cache, err := IndexCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(cache, hex.EncodeToString(sum[:12])+".json"), nil
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// SaveIndex writes idx into the cache, atomically (a temporary file
// renamed), and returns its path. It refuses a cache inside the dataset's
// directory: the user's directory is never written.
func SaveIndex(idx *Index) (string, error) {
	p, err := indexPath(idx.Dir)
	if err != nil {
		return "", err
	}
	if cache, err := filepath.Abs(filepath.Dir(p)); err != nil || within(cache, idx.Dir) {
		return "", fmt.Errorf("ondisk: the index cache %s lies inside the dataset %s, which is never written: set HEADSPACE_CACHE elsewhere", filepath.Dir(p), idx.Dir)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".index-*")
	if err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("ondisk: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	return p, nil
}

// memo keeps the indexes this process built or loaded, so that the
// commands' several looks at one directory index it once; an entry is
// used only while its fingerprint matches.
var memo = struct {
	sync.Mutex
	m map[string]*Index
}{m: map[string]*Index{}}

// LoadIndex is dir's index: the cached one while its fingerprint matches
// the files (cached reports so), or one built now, in memory (the cache is
// written only by SaveIndex: `headspace dataset index`).
func LoadIndex(ctx context.Context, dir string) (idx *Index, cached bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, false, fmt.Errorf("ondisk: %w", err)
	}
	memo.Lock()
	m := memo.m[abs]
	memo.Unlock()
	if m != nil {
		if _, files, err := listFiles(abs, m.Kind); err == nil && fingerprint(m.Kind, files) == m.Fingerprint {
			return m, false, nil
		}
	}
	defer func() {
		if err == nil {
			memo.Lock()
			memo.m[abs] = idx
			memo.Unlock()
		}
	}()
	if p, err := indexPath(abs); err == nil {
		if b, err := os.ReadFile(p); err == nil {
			var c Index
			if json.Unmarshal(b, &c) == nil && c.Version == IndexVersion && c.Dir == abs && c.validate() == nil {
				if _, files, err := listFiles(abs, c.Kind); err == nil && fingerprint(c.Kind, files) == c.Fingerprint {
					return &c, true, nil
				}
			}
		}
	}
	idx, err = BuildIndex(ctx, abs)
	return idx, false, err
}

// validate checks a cached index's internal consistency.
func (x *Index) validate() error {
	if x.Kind != KindImageFolder && x.Kind != KindWebDataset {
		return fmt.Errorf("kind %q", x.Kind)
	}
	if len(x.Samples) == 0 {
		return errors.New("no samples")
	}
	for _, f := range x.Files {
		if !fs.ValidPath(f) {
			return fmt.Errorf("file %q", f)
		}
	}
	for _, s := range x.Samples {
		if s.File < 0 || s.File >= len(x.Files) || s.Label < 0 || s.Label >= max(len(x.Classes), 1) || s.Size < 0 || s.Offset < 0 {
			return errors.New("sample out of range")
		}
	}
	return nil
}

// Sum is the index's identity for a result file: its fingerprint.
func (x *Index) Sum() string { return x.Fingerprint }

// Formats is the image formats the index holds, "+"-joined: "jpeg",
// "png" or "jpeg+png".
func (x *Index) Formats() string {
	var formats []string
	for _, s := range x.Samples {
		if s.Format != "" && !slices.Contains(formats, s.Format) {
			formats = append(formats, s.Format)
		}
	}
	sort.Strings(formats)
	if len(formats) == 0 {
		return "none"
	}
	return strings.Join(formats, "+")
}

// Size is an image size and how many samples have it.
type Size struct {
	Width, Height, Count int
}

// Sizes is the distribution of the readable samples' sizes, most common
// first (ties: larger first).
func (x *Index) Sizes() []Size {
	count := map[[2]int]int{}
	for _, s := range x.Samples {
		if s.Error == "" {
			count[[2]int{s.Width, s.Height}]++
		}
	}
	var out []Size
	for k, n := range count {
		out = append(out, Size{k[0], k[1], n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Width*a.Height != b.Width*b.Height {
			return a.Width*a.Height > b.Width*b.Height
		}
		return a.Width > b.Width
	})
	return out
}

// SizeSummary describes the size distribution in one line for a result
// file: the number of distinct sizes, the smallest and largest area, and
// the three most common with their shares.
func (x *Index) SizeSummary() string {
	sz := x.Sizes()
	if len(sz) == 0 {
		return "none readable"
	}
	total := 0
	lo, hi := sz[0], sz[0]
	for _, s := range sz {
		total += s.Count
		if s.Width*s.Height < lo.Width*lo.Height {
			lo = s
		}
		if s.Width*s.Height > hi.Width*hi.Height {
			hi = s
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d distinct, smallest %dx%d, largest %dx%d; most common", len(sz), lo.Width, lo.Height, hi.Width, hi.Height)
	for i, s := range sz[:min(3, len(sz))] {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %dx%d %.0f%%", s.Width, s.Height, 100*float64(s.Count)/float64(total))
	}
	return b.String()
}

// Failed is the number of samples the index already knows cannot be read.
func (x *Index) Failed() int {
	n := 0
	for _, s := range x.Samples {
		if s.Error != "" {
			n++
		}
	}
	return n
}

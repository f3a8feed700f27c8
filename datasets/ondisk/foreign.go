package ondisk

import (
	"bytes"
	"cmp"
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

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// The kinds of dataset a user brings, read without a headspace manifest.
const (
	// KindImageFolder is torchvision's ImageFolder: one subdirectory per
	// class (labels are the sorted directory names' indices) holding
	// .jpg, .jpeg or .png files, at any depth below it, symbolic links to
	// directories followed (listImageFolder).
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
	// Fingerprint is the SHA-256 of the class directories and every
	// listed file's name, size and modification time (and of the rules
	// the index is built by): a cached index is used only while it
	// matches.
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
	// only); Size is the image's byte size in both kinds. The one failing
	// sample that stands for what a shard could not index has Member
	// "(after NAME)", NAME the last member it read, or "" when it read
	// none (a shard that cannot be opened or is not a tar archive).
	Member string `json:"member,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Size   int64  `json:"size"`
	Label  int    `json:"label"`
	Format string `json:"format,omitempty"` // jpeg or png, from the header
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	// Error is why the sample cannot be read (a bad header, an unsupported
	// format, no label, no permission, a dangling link, a cut shard):
	// reading it fails with this error, naming the file, and
	// --max-failures may skip it.
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
		if isDir(dir, e) {
			dirs++
		}
	}
	if dirs > 0 {
		return KindImageFolder, nil
	}
	return "", fmt.Errorf("ondisk: %s: not a dataset: no manifest (headspace dataset write), no class subdirectories (ImageFolder), no .tar shards (WebDataset)", dir)
}

// isDir reports whether the entry e of dir is a folder. A class folder may
// be a symbolic link, as ImageFolder's is_dir() follows it: it counts when
// it leads to a folder.
func isDir(dir string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	fi, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && fi.IsDir()
}

// listed is a file of a user's dataset with what the fingerprint covers.
type listed struct {
	rel  string // slash-separated, relative to the dataset directory
	size int64
	mod  int64
}

// listFiles lists the files an index of dir covers, sorted: the image
// files of every class directory (ImageFolder, listImageFolder) or the
// top-level shards (WebDataset). It is the one place a dataset's files are
// listed (the index, its fingerprint check, the page-cache warm-up and
// eviction), and it looks at ctx before every directory entry, so SIGINT
// stops a listing of any size at once.
func listFiles(ctx context.Context, dir, kind string) (classes []string, files []listed, err error) {
	if kind == KindImageFolder {
		return listImageFolder(ctx, dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, corrupt(fmt.Errorf("ondisk: %w", err))
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if strings.HasPrefix(e.Name(), ".") || !strings.EqualFold(path.Ext(e.Name()), ".tar") {
			continue
		}
		f, err := statListed(filepath.Join(dir, e.Name()), e.Name())
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	return nil, files, nil
}

// listImageFolder lists an ImageFolder as torchvision's ImageFolder does:
// the classes are the subdirectories of dir (find_classes: os.scandir's
// is_dir(), which follows symbolic links), and each class's images are
// found by walking it with symbolic links to directories followed
// (make_dataset: os.walk(followlinks=True)). Unlike os.walk, a link back
// to a directory the walk is inside (a loop) is not followed again. A
// symbolic link whose target is missing, or a file that cannot be
// stat'ed, is listed all the same: its sample fails with the reason
// (headerOfFile), which --max-failures may skip, as a file that cannot be
// read does. Hidden entries (a leading dot) are skipped; torchvision lists
// them.
func listImageFolder(ctx context.Context, dir string) (classes []string, files []listed, err error) {
	top, err := os.Stat(dir)
	if err != nil {
		return nil, nil, corrupt(fmt.Errorf("ondisk: %w", err))
	}
	if classes, err = classFolders(ctx, dir); err != nil {
		return nil, nil, err
	}
	for _, c := range classes {
		p := filepath.Join(dir, c)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, corrupt(fmt.Errorf("ondisk: %w", err))
		}
		if os.SameFile(fi, top) {
			continue // a class that is the dataset itself
		}
		if err := walkImages(ctx, p, c, []os.FileInfo{top, fi}, &files); err != nil {
			return nil, nil, err
		}
	}
	return classes, files, nil
}

// classFolders are the folders (or links to folders) at the top of an
// ImageFolder dataset, sorted, hidden ones left out.
func classFolders(ctx context.Context, dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, corrupt(fmt.Errorf("ondisk: %w", err))
	}
	var classes []string
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if isDir(dir, e) {
			classes = append(classes, e.Name())
		}
	}
	sort.Strings(classes)
	return classes, nil
}

// walkImages lists the image files under p (rel in the dataset) into
// files, following links to folders but not into a folder the walk is
// already inside (parents).
func walkImages(ctx context.Context, p, rel string, parents []os.FileInfo, files *[]listed) error {
	ents, err := os.ReadDir(p)
	if err != nil {
		return corrupt(fmt.Errorf("ondisk: %w", err))
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		ep, erel := filepath.Join(p, name), rel+"/"+name
		if !isDir(p, e) {
			if imageExt(name) {
				f, err := statListed(ep, erel)
				if err != nil {
					return err
				}
				*files = append(*files, f)
			}
			continue
		}
		fi, err := os.Stat(ep) // os.Stat's, which os.SameFile compares everywhere
		if err != nil {
			return corrupt(fmt.Errorf("ondisk: %w", err))
		}
		if slices.ContainsFunc(parents, func(a os.FileInfo) bool { return os.SameFile(a, fi) }) {
			continue // a loop: ep is a directory the walk is inside
		}
		if err := walkImages(ctx, ep, erel, append(parents, fi), files); err != nil {
			return err
		}
	}
	return nil
}

// statListed is the listing of the file at p (rel in the dataset), its
// symbolic links followed; a link whose target is missing is listed as
// the link itself, so that its sample fails naming it instead of the
// listing failing.
func statListed(p, rel string) (listed, error) {
	fi, err := os.Stat(p)
	if err != nil {
		if fi, err = os.Lstat(p); err != nil {
			return listed{}, corrupt(fmt.Errorf("ondisk: %w", err))
		}
	}
	return listed{rel, fi.Size(), fi.ModTime().UnixNano()}, nil
}

// indexRules names the rules an index is built by. It enters every
// fingerprint, so an index cached under older rules (before issue 32:
// shards cut at a header boundary read as whole, linked class
// directories left out) no longer matches and is rebuilt.
const indexRules = "rules 2: tar end marker required; links to directories followed"

// fingerprint identifies a listing: the kind, the rules, the classes and
// every file's name, size and modification time.
func fingerprint(kind string, classes []string, files []listed) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%q\n", kind, indexRules, classes)
	for _, f := range files {
		fmt.Fprintf(h, "%q %d %d\n", f.rel, f.size, f.mod)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BuildIndex indexes the ImageFolder or WebDataset shards in dir, reading
// only headers: each image's header (checkUserImage), each shard's tar
// headers and label members. It never writes anything. A file it cannot
// read (no permission, a dangling link, a pipe, a bad header) becomes a
// sample with an Error; so does what follows the last member a shard
// could index (a shard that cannot be opened, is not a tar archive, or is
// cut, even at a header boundary): one sample naming the shard. The index
// fails only when no sample at all can be read (ErrCorrupt: bad input,
// naming the first unreadable file and why), or when ctx is done (its
// error, unwrapped), which it looks at before every directory entry and
// every file or member it reads.
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
	classes, files, err := listFiles(ctx, abs, kind)
	if err != nil {
		return nil, err
	}
	idx := &Index{Version: IndexVersion, Dir: abs, Kind: kind, Fingerprint: fingerprint(kind, classes, files), Classes: classes}
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
		return nil, corruptf("ondisk: %s: %s with no images (.jpg, .jpeg, .png)", dir, kind)
	}
	if idx.Failed() == len(idx.Samples) {
		s := idx.Samples[0]
		return nil, corruptf("ondisk: %s: no image can be read (%d unreadable); the first: %s: %s", dir, len(idx.Samples), idx.Where(0), s.Error)
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

// path names the file rel of the dataset: a path under Dir, or for a
// dataset in a bucket (Dir an s3:// URL) the object's URL.
func (x *Index) path(rel string) string {
	if bucket.IsURL(x.Dir) {
		return x.Dir + "/" + rel
	}
	return filepath.Join(x.Dir, filepath.FromSlash(rel))
}

// Where names sample i's file, and its member in a shard, for errors.
func (x *Index) Where(i int) string {
	s := x.Samples[i]
	p := x.path(x.Files[s.File])
	if x.Kind == KindWebDataset && s.Member != "" {
		return p + " member " + s.Member
	}
	return p // an image file, or a shard that failed as a whole
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
	var textLabels []string // class names met in .txt labels
	var samples []pendingSample
	for fi, rel := range idx.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		// What of a shard cannot be indexed is one sample that fails,
		// naming the shard, so --max-failures decides.
		fail := func(member, why string) {
			samples = append(samples, pendingSample{s: IndexSample{File: fi, Member: member, Error: why}, hasImage: true, hasLabel: true, label: "0"})
		}
		f, size, err := open(rel, MaxUserFileBytes)
		if err != nil {
			fail("", strings.TrimPrefix(err.Error(), idx.path(rel)+": "))
			continue
		}
		members, ierr := IndexShard(io.NewSectionReader(f, 0, size))
		byKey := map[string]int{} // key → position in samples, this shard
		for _, m := range members {
			if err := ctx.Err(); err != nil {
				f.Close()
				return err
			}
			key, ext := wdsKey(m.Name)
			k, ok := byKey[key]
			if !ok {
				k = len(samples)
				byKey[key] = k
				samples = append(samples, pendingSample{s: IndexSample{File: fi, Member: key}})
			}
			samples[k].add(f, m, ext, &textLabels)
		}
		f.Close()
		if ierr != nil {
			member := "" // the shard as a whole
			if len(members) > 0 {
				member = "(after " + members[len(members)-1].Name + ")"
			}
			fail(member, ierr.Error())
		}
	}
	labelSamples(idx, samples, textLabels)
	return nil
}

// pendingSample is a WebDataset sample while its shard is read: its image
// member, and its label as the .cls or .txt member gives it.
type pendingSample struct {
	s        IndexSample
	hasImage bool
	label    string // the .cls or .txt text
	hasLabel bool
	labelErr string
}

// add takes member m of the shard f, of extension ext, into the sample:
// the first image member is the sample's image (checked), a .cls label
// wins over a .txt one, and a .txt label that is no number is a class
// name, added to textLabels.
func (ps *pendingSample) add(f io.ReaderAt, m Member, ext string, textLabels *[]string) {
	switch ext {
	case "jpg", "jpeg", "png":
		if ps.hasImage {
			return // the first image member is the sample's
		}
		ps.hasImage = true
		ps.s.Member, ps.s.Offset, ps.s.Size = m.Name, m.Offset, m.Size
		if m.Size > MaxUserImageBytes {
			ps.s.Error = fmt.Sprintf("%d bytes, more than the %d an image may have", m.Size, MaxUserImageBytes)
			return
		}
		format, w, h, err := checkUserImage(io.NewSectionReader(f, m.Offset, m.Size))
		if err != nil {
			ps.s.Error = err.Error()
		}
		ps.s.Format, ps.s.Width, ps.s.Height = format, w, h
	case "cls", "txt":
		if ps.hasLabel && ext == "txt" {
			return // .cls wins
		}
		if m.Size > 4096 {
			ps.labelErr = fmt.Sprintf("label member %s: %d bytes, not a label", m.Name, m.Size)
			return
		}
		b := make([]byte, m.Size)
		if _, err := f.ReadAt(b, m.Offset); err != nil {
			ps.labelErr = fmt.Sprintf("label member %s: %v", m.Name, err)
			return
		}
		ps.label, ps.hasLabel, ps.labelErr = strings.TrimSpace(string(b)), true, ""
		if _, err := strconv.Atoi(ps.label); err != nil && !slices.Contains(*textLabels, ps.label) {
			*textLabels = append(*textLabels, ps.label)
		}
	}
}

// labelSamples gives each sample with an image its label (class names,
// sorted, take the first labels; numbers follow) or its error, and the
// index its classes.
func labelSamples(idx *Index, samples []pendingSample, textLabels []string) {
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
	return writeJSON(p, idx)
}

// writeJSON writes v as one line of JSON to p in the cache, atomically
// (atomicfile), making p's directory if needed, and returns p.
func writeJSON(p string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(p), 0o755)
	}
	if err == nil {
		err = atomicfile.WriteBytes(p, append(b, '\n'))
	}
	if err != nil {
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
	if m != nil && m.current(ctx) {
		return m, false, nil
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
			if json.Unmarshal(b, &c) == nil && c.Version == IndexVersion && c.Dir == abs && c.validate() == nil && c.current(ctx) {
				return &c, true, nil
			}
		}
	}
	idx, err = BuildIndex(ctx, abs)
	return idx, false, err
}

// current reports whether the files of x.Dir still have x's fingerprint.
func (x *Index) current(ctx context.Context) bool {
	classes, files, err := listFiles(ctx, x.Dir, x.Kind)
	return err == nil && fingerprint(x.Kind, classes, files) == x.Fingerprint
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
	slices.SortFunc(out, func(a, b Size) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(b.Width*b.Height, a.Width*a.Height), cmp.Compare(b.Width, a.Width))
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
	for _, s := range sz {
		total += s.Count
	}
	byArea := func(a, b Size) int { return cmp.Compare(a.Width*a.Height, b.Width*b.Height) }
	lo, hi := slices.MinFunc(sz, byArea), slices.MaxFunc(sz, byArea)
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

package history

// The store's index (issue 37): what a machine folder holds, so that Add
// checks the setup and duplicates without reading every earlier run.
//
// Each machine folder keeps DIR/<folder>/.index, a JSON file listing its
// runs oldest first: the file's name, size and SHA-256, and what inspect
// reads from it (commit, date, machine, setup, partial). Add reads it
// under the machine's lock, and rewrites it atomically (internal/
// atomicfile: a temporary file renamed onto it) after each run it files.
//
// The index is a cache of the files, never a source of truth. Before it
// is used it is checked against the folder: the run files' names and
// sizes (one listing of the folder, no file read) must be the index's,
// and the latest run (one file read: the setup check rests on it) must
// be what the index records of it, field by field. A missing index is built from the files; one that cannot be
// parsed, is of another format, or disagrees with the folder is rebuilt
// from the files with a message saying why. So a killed add — its run
// linked into place, the index not yet rewritten — leaves a folder whose
// next add rebuilds the index; and its temporary file, left under a
// dot name that no reader lists, is removed by the next add of the
// machine (which holds the lock, so no add of it is writing one).
//
// Why names, sizes and the latest run and not every file's hash or
// modification time: checking every hash is reading every run, which the
// index exists to avoid; modification times differ in every clone (the
// nightly runs in a fresh checkout), so they would rebuild the index
// every night. The index holds no time, so committed beside the runs it
// stays valid in every checkout. What it does not catch is an older
// run edited in place to another content of the same size: then the
// duplicate check compares with its recorded hash; `history report`
// reads every file itself and does not use the index.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// IndexName is a machine folder's index file.
const IndexName = ".index"

// indexFormat names the index's format; an index of another is rebuilt.
const indexFormat = "headspace history index 1"

// index is a machine folder's index: its runs, oldest first.
type index struct {
	Format string       `json:"format"`
	Runs   []indexEntry `json:"runs"`
}

// indexEntry is one run file as the index records it.
type indexEntry struct {
	Name    string            `json:"name"`
	Size    int64             `json:"size"`
	SHA256  string            `json:"sha256"`
	Commit  string            `json:"commit"`
	Date    time.Time         `json:"date"`
	Machine gate.Machine      `json:"machine"`
	Setup   map[string]string `json:"setup"`
	Partial bool              `json:"partial,omitempty"`
}

// listing is a machine folder's run files (as Runs lists them: *.txt,
// not hidden, regular) and their sizes, by name; a symbolic link is an
// error (errLink). Empty, with no error, when the folder does not exist.
func listing(mdir string) (map[string]int64, error) {
	ents, err := runFiles(mdir)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		out[e.Name()] = info.Size()
	}
	return out, nil
}

// runFiles lists the run files of machine folder mdir, the one rule of
// what a run file is: its regular, not hidden .txt files. A folder or a
// run file that is a symbolic link is refused (errLink); a folder that
// does not exist holds none.
func runFiles(mdir string) ([]fs.DirEntry, error) {
	fi, err := os.Lstat(mdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errLink(mdir)
	}
	ents, err := os.ReadDir(mdir)
	if err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".txt") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			return nil, errLink(filepath.Join(mdir, e.Name()))
		}
		if e.Type().IsRegular() {
			out = append(out, e)
		}
	}
	return out, nil
}

// readIndex reads the index of machine folder folder in dir and checks
// it against the folder (see the file's doc). It returns the index, or,
// when the index is missing or cannot be trusted, an index rebuilt from
// the files and why (the message; "" when the index was good). It
// writes nothing.
func readIndex(dir, folder string) (*index, string, error) {
	mdir := filepath.Join(dir, folder)
	files, err := listing(mdir)
	if err != nil {
		return nil, "", err
	}
	if err := checkIndexFile(mdir); err != nil {
		return nil, "", err
	}
	idx, err := loadIndexFile(mdir)
	var why string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "missing"
	case err != nil:
		why = fmt.Sprintf("unreadable (%v)", err)
	default:
		if why = checkRuns(mdir, idx, files); why == "" {
			return idx, "", nil
		}
	}
	idx, err = buildIndex(mdir, files)
	if err != nil {
		return nil, "", err
	}
	if len(files) == 0 && why == "missing" {
		return idx, "", nil // a new folder: nothing to say
	}
	return idx, fmt.Sprintf("%s: %s; rebuilt it from the %d run files", filepath.Join(mdir, IndexName), why, len(files)), nil
}

// maxIndexBytes bounds an index read: about 150 thousand runs, far
// beyond any store, so that a device or a runaway file in its place is
// an error, not a read without end.
const maxIndexBytes = 64 << 20

// maxRunBytes bounds the read of a run file (a results file): the
// largest the store takes.
const maxRunBytes = 256 << 20

// checkIndexFile refuses an index that is not a regular file: a named
// pipe (whose open or read would wait for a writer that never comes), a
// device, a socket, a folder or a symbolic link. Such a file is not one
// Add wrote, and rebuilding over it would replace what someone put
// there, so the store is refused, naming it.
func checkIndexFile(mdir string) error {
	p := filepath.Join(mdir, IndexName)
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): the store's index is one that add writes; remove it, and the next add rebuilds it from the run files", p, atomicfile.ModeName(fi.Mode()))
	}
	return nil
}

// loadIndexFile parses mdir's index file, read without waiting (a
// non-regular file in its place is refused when it is opened:
// atomicfile.OpenRegular) and at most maxIndexBytes.
func loadIndexFile(mdir string) (*index, error) {
	data, err := atomicfile.ReadFileLimit(filepath.Join(mdir, IndexName), maxIndexBytes)
	if err != nil {
		return nil, err
	}
	var idx index
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		return nil, err
	}
	if idx.Format != indexFormat {
		return nil, fmt.Errorf("its format is %q, not %q", idx.Format, indexFormat)
	}
	return &idx, nil
}

// checkRuns says why index idx of mdir disagrees with the run files
// files, or "" when it agrees.
func checkRuns(mdir string, idx *index, files map[string]int64) string {
	seen := map[string]bool{}
	for i, e := range idx.Runs {
		size, ok := files[e.Name]
		switch {
		case seen[e.Name]:
			return fmt.Sprintf("it lists %s twice", e.Name)
		case !ok:
			return fmt.Sprintf("it lists %s, which the folder does not hold", e.Name)
		case size != e.Size:
			return fmt.Sprintf("it records %s as %d bytes, the file has %d", e.Name, e.Size, size)
		case i > 0 && entryOrder(idx.Runs[i-1], e) >= 0:
			return fmt.Sprintf("its runs are out of order at %s", e.Name)
		}
		seen[e.Name] = true
	}
	if len(seen) != len(files) {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if !seen[name] {
				return fmt.Sprintf("it lacks %s, which the folder holds", name)
			}
		}
	}
	if n := len(idx.Runs); n > 0 {
		// The setup check rests on the latest run: read it, and compare
		// every field.
		last := idx.Runs[n-1]
		p := filepath.Join(mdir, last.Name)
		data, err := atomicfile.ReadFileLimit(p, maxRunBytes)
		if err != nil {
			return fmt.Sprintf("the latest run cannot be read (%v)", err)
		}
		r, _, err := inspect(p)
		if err != nil {
			return fmt.Sprintf("the latest run cannot be read (%v)", err)
		}
		if want := entryOf(r, last.Name, data); !sameEntry(want, last) {
			return fmt.Sprintf("what it records of the latest run, %s, is not what the file holds", last.Name)
		}
	}
	return ""
}

// sameEntry says whether two index entries record the same.
func sameEntry(a, b indexEntry) bool {
	return a.Name == b.Name && a.Size == b.Size && a.SHA256 == b.SHA256 && a.Commit == b.Commit &&
		a.Date.Equal(b.Date) && a.Machine == b.Machine && a.Partial == b.Partial && maps.Equal(a.Setup, b.Setup)
}

// entryOrder orders a folder's runs as Runs does: by date, then name.
func entryOrder(a, b indexEntry) int {
	if c := a.Date.Compare(b.Date); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// buildIndexOf lists mdir and reads every run file in it.
func buildIndexOf(mdir string) (*index, error) {
	files, err := listing(mdir)
	if err != nil {
		return nil, err
	}
	return buildIndex(mdir, files)
}

// buildIndex reads every run file of mdir (files: name → size).
func buildIndex(mdir string, files map[string]int64) (*index, error) {
	idx := &index{Format: indexFormat}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(mdir, name)
		r, _, err := inspect(p)
		if err != nil {
			return nil, err
		}
		data, err := atomicfile.ReadFileLimit(p, maxRunBytes)
		if err != nil {
			return nil, err
		}
		idx.Runs = append(idx.Runs, entryOf(r, name, data))
	}
	slices.SortStableFunc(idx.Runs, entryOrder)
	return idx, nil
}

// entryOf is run r's index entry for its file name and content.
func entryOf(r Run, name string, data []byte) indexEntry {
	sum := sha256.Sum256(data)
	return indexEntry{
		Name: name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
		Commit: r.Commit, Date: nameDate(name, r.Date), Machine: r.Machine, Setup: r.Setup, Partial: r.Partial,
	}
}

// nameDate is the date a run file's name records (the date it was added
// under, which Runs takes too), else d.
func nameDate(name string, d time.Time) time.Time {
	if s, _, _ := strings.Cut(name, "-"); len(s) == len(DateLayout) {
		if t, err := time.Parse(DateLayout, s); err == nil {
			return t
		}
	}
	return d.UTC()
}

// writeIndex writes idx as mdir's index, atomically: JSON with one line
// per run, so that a run added is a line added in git's diff. The
// caller holds the machine's lock.
func writeIndex(mdir string, idx *index) error {
	format, err := json.Marshal(idx.Format)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"format\": %s, \"runs\": [", format)
	for i, e := range idx.Runs {
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(line)
	}
	b.WriteString("\n]}\n")
	return atomicfile.WriteBytes(filepath.Join(mdir, IndexName), b.Bytes())
}

// latestRun is the latest run of an index, as a Run of folder folder in
// dir (no Setup copy: read only); ok is false when the index is empty.
func (idx *index) latestRun(dir, folder string) (Run, bool) {
	n := len(idx.Runs)
	if n == 0 {
		return Run{}, false
	}
	e := idx.Runs[n-1]
	return Run{Machine: e.Machine, Key: folder, Commit: e.Commit, Date: e.Date, Path: filepath.Join(dir, folder, e.Name), Setup: e.Setup, Partial: e.Partial}, true
}

// Latest is the latest run of machine folder folder in the store in dir
// (MachineFolder), from the folder's index as Add checks it (rebuilt in
// memory, not written, when it cannot be trusted): one file read however
// many runs the folder holds. Its Path, Commit, Date, Machine, Setup and
// Partial are set; ok is false when the folder holds no run.
func Latest(dir, folder string) (run Run, ok bool, err error) {
	idx, _, err := readIndex(dir, folder)
	if err != nil {
		return Run{}, false, err
	}
	run, ok = idx.latestRun(dir, folder)
	return run, ok, nil
}

// sweepTemps removes the temporary files of killed adds (".add-*.tmp")
// from mdir. The caller holds the machine's lock: no add of this
// machine is writing one.
func sweepTemps(mdir string) error {
	tmps, err := filepath.Glob(filepath.Join(mdir, ".add-*.tmp"))
	if err != nil {
		return err
	}
	for _, t := range tmps {
		if err := os.Remove(t); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

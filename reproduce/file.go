package reproduce

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

// FileError is a saved file a rebuild cannot use: missing, not a result
// file, another document's, or lacking a configuration line the report
// needs. Its message is one line that names the file.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	msg, _, _ := strings.Cut(e.Err.Error(), "\n")
	return e.Path + ": " + msg
}

func (e *FileError) Unwrap() error { return e.Err }

// The configuration keys every result file of a document opens with,
// besides the machine's (goos, goarch, cpu, commit, device, cores,
// gomaxprocs, go, distro, date).
const (
	keyDocument = "document" // the document's ID: a file of another is refused
	keyCommand  = "command"  // the command line that measured it
	keyQuick    = "quick"    // --quick: tiny sizes
	keyElapsed  = "elapsed"  // the measurement's run time
)

// headerConfig is the configuration every result file opens with: the
// document, the machine, the device, the command, and the run time, all a
// report's header prints.
func headerConfig(d Doc, m machine.Machine, device, command string, quick bool, elapsed time.Duration) []resultfile.Config {
	return []resultfile.Config{
		{Key: keyDocument, Value: d.ID},
		{Key: "goos", Value: m.OS},
		{Key: "goarch", Value: m.Arch},
		{Key: "cpu", Value: m.CPU},
		{Key: "commit", Value: m.Commit},
		{Key: "device", Value: device},
		{Key: "cores", Value: strconv.Itoa(m.Cores)},
		{Key: "gomaxprocs", Value: strconv.Itoa(m.GOMAXPROCS)},
		{Key: "go", Value: m.Go},
		{Key: "distro", Value: m.Distro},
		{Key: "date", Value: m.Date.UTC().Format(time.RFC3339)},
		{Key: keyCommand, Value: command},
		{Key: keyQuick, Value: strconv.FormatBool(quick)},
		{Key: keyElapsed, Value: elapsed.Round(time.Millisecond).String()},
	}
}

// resultFile is a document's saved result file, read back: its
// configuration and its records, in file order. Its accessors keep the
// first problem (a missing or malformed configuration line) in err, so a
// renderer reads a list of values and checks once.
type resultFile struct {
	doc    Doc
	path   string
	config map[string]string
	recs   []*benchfmt.Result
	err    error
}

// readResultFile reads the result file of document d at path. A file
// that is missing, does not read cleanly, holds no results, or was
// written for another document is a *FileError.
func readResultFile(path string, d Doc) (*resultFile, error) {
	rs, err := resultfile.Read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &FileError{Path: path, Err: errors.New("no such file")}
	case err != nil:
		return nil, &FileError{Path: path, Err: fmt.Errorf("not a result file: %w", err)}
	case len(rs) == 0:
		return nil, &FileError{Path: path, Err: errors.New("not a result file: it holds no results")}
	}
	f := &resultFile{doc: d, path: path, config: map[string]string{}}
	for _, c := range rs[0].Config {
		if c.File {
			f.config[c.Key] = string(c.Value)
		}
	}
	if got := f.config[keyDocument]; got != d.ID {
		if got == "" {
			got = "none"
		}
		return nil, &FileError{Path: path, Err: fmt.Errorf("not a result file of document %s (its document: %s)", d.ID, got)}
	}
	f.recs = rs
	return f, nil
}

// check is the first problem the accessors met, as a *FileError.
func (f *resultFile) check() error {
	if f.err == nil {
		return nil
	}
	return &FileError{Path: f.path, Err: f.err}
}

// str is the configuration value of key.
func (f *resultFile) str(key string) string {
	v, ok := f.config[key]
	if !ok && f.err == nil {
		f.err = fmt.Errorf("no %q configuration line", key)
	}
	return v
}

// parsed is the configuration value of key converted by parse; a value
// that parse refuses is the file's problem, said as "is not <what>".
func parsed[T any](f *resultFile, key, what string, parse func(string) (T, error)) T {
	s := f.str(key)
	v, err := parse(s)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("configuration %s: %q is not %s", key, s, what)
	}
	return v
}

// integer is the integer configuration value of key.
func (f *resultFile) integer(key string) int { return parsed(f, key, "an integer", strconv.Atoi) }

// duration is the duration configuration value of key.
func (f *resultFile) duration(key string) time.Duration {
	return parsed(f, key, "a duration", time.ParseDuration)
}

// boolean is the boolean configuration value of key.
func (f *resultFile) boolean(key string) bool {
	return parsed(f, key, "true or false", strconv.ParseBool)
}

// integers is the comma-separated integers of key.
func (f *resultFile) integers(key string) []int {
	return parsed(f, key, "a list of integers", func(s string) ([]int, error) {
		var out []int
		for _, x := range strings.Split(s, ",") {
			n, err := strconv.Atoi(x)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	})
}

// square is the side of the square size "WxW" of key.
func (f *resultFile) square(key string) int {
	return parsed(f, key, "a square size WxW", func(s string) (int, error) {
		var w, h int
		if _, err := fmt.Sscanf(s, "%dx%d", &w, &h); err != nil || w != h {
			return 0, errors.New("not square")
		}
		return w, nil
	})
}

// header is the report's header, from the file's configuration.
func (f *resultFile) header() Header {
	d := f.doc
	date, err := time.Parse(time.RFC3339, f.str("date"))
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("configuration date: %w", err)
	}
	return Header{ID: d.ID, Title: d.Title, Source: d.Source,
		Command: f.str(keyCommand), Quick: f.boolean(keyQuick),
		Machine: machine.Machine{CPU: f.str("cpu"), Cores: f.integer("cores"), GOMAXPROCS: f.integer("gomaxprocs"),
			OS: f.str("goos"), Arch: f.str("goarch"), Distro: f.str("distro"), Go: f.str("go"),
			Commit: f.str("commit"), Date: date},
		Device:  f.str("device"),
		Elapsed: f.duration(keyElapsed),
		Results: resultsLink(d),
	}
}

// copyFile copies a saved file to dst (atomically), for a rebuild into
// another directory than the files came from; nothing when they are one.
func copyFile(src, dst string) error {
	if same(src, dst) {
		return nil
	}
	if strings.HasSuffix(src, ".txt") {
		// A result file: the driver writes it.
		if err := driver.Copy(src, dst); err != nil {
			if errors.Is(err, resultfile.ErrRefused) {
				return err
			}
			return &FileError{Path: src, Err: err}
		}
		return nil
	}
	b, err := atomicfile.ReadFileLimit(src, maxSaved)
	if err != nil {
		return &FileError{Path: src, Err: err}
	}
	return atomicfile.WriteKindBytes(dst, savedKind, b)
}

// same says whether two paths name one file.
func same(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// decoded is the outcome of a typed experiment read back from f's
// records by its codec (workloads.Codec): the typed reports (000, 002,
// 004) render from it, never from names parsed as strings. A file whose
// records are not the experiment's is a *FileError.
func decoded[R any](f *resultFile, c workloads.Codec[R]) (R, error) {
	out, err := c.Decode(f.recs)
	if err != nil {
		return out, &FileError{Path: f.path, Err: err}
	}
	return out, nil
}

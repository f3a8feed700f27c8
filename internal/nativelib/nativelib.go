// Package nativelib is the one place headspace opens a native shared
// library at run time, with github.com/ebitengine/purego: no cgo, no
// headers or toolkit at build time, one static binary that uses a library
// where the machine has one and says plainly why not where it has none.
// The CUDA driver (package cuda), nvJPEG (cuda's JPEGDecoder) and
// libjpeg-turbo (datasets/turbojpeg) are loaded through it.
//
// A caller names the candidates in its order of preference (Candidates
// builds the usual list: an environment variable's path, the sonames the
// dynamic loader searches for, files matching globs) and the entry points
// it needs; OpenFirst opens the first candidate that loads and has all of
// them. Its error is one line that carries each candidate's reason (the
// dynamic loader's message names the file, a missing entry point is
// named with its file), for the caller to wrap with what the library is
// and how to install it.
//
// Loading is Linux-only: elsewhere every Open fails with ErrUnsupported
// (Supported is false) and the callers say so; CUDA and nvJPEG have no
// macOS build, and on Windows a DLL would need purego's other loader,
// which nothing here asks for yet.
//
// Call and CallArgs call an entry point with integer and pointer
// arguments, Bind one with floating-point ones too; NewCallback makes a
// Go func a C function pointer, for a library to call back; CString and
// CStringAt read the C strings they return.
package nativelib

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// ErrUnsupported is the error of every Open where loading native
// libraries is not supported (every OS but Linux).
var ErrUnsupported = errors.New("loaded on Linux only (on " + runtime.GOOS + ")")

// Symbol is one entry point to resolve: its exported name and where its
// address goes.
type Symbol struct {
	Name string
	Addr *uintptr
}

// Lib is an opened library.
type Lib struct {
	// Name is the candidate it was opened by: a soname or a path.
	Name   string
	handle uintptr
}

// Open opens the library name (a soname the dynamic loader searches for,
// or a path) and resolves each of syms into its Addr. A missing entry
// point fails with "<name> has no <symbol>: <reason>".
func Open(name string, syms []Symbol) (*Lib, error) {
	if !Supported {
		return nil, ErrUnsupported
	}
	h, err := dlopen(name)
	if err != nil {
		return nil, err
	}
	l := &Lib{Name: name, handle: h}
	for _, s := range syms {
		a, err := dlsym(h, s.Name)
		if err != nil {
			return nil, fmt.Errorf("%s has no %s: %w", name, s.Name, err)
		}
		*s.Addr = a
	}
	return l, nil
}

// OpenFirst opens the first of names that loads and has every one of
// syms. Its error is ErrUnsupported where loading is, or one line joining
// each name's reason with "; " (each reason names its file).
func OpenFirst(names []string, syms []Symbol) (*Lib, error) {
	if !Supported {
		return nil, ErrUnsupported
	}
	var errs []string
	for _, n := range names {
		l, err := Open(n, syms)
		if err == nil {
			return l, nil
		}
		errs = append(errs, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if len(errs) == 0 {
		return nil, errors.New("no candidate to open")
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

// Lookup is the address of the optional entry point name, 0 where the
// library lacks it.
func (l *Lib) Lookup(name string) uintptr {
	a, err := dlsym(l.handle, name)
	if err != nil {
		return 0
	}
	return a
}

// Candidates lists the places to open a library from, in order: the
// path in the environment variable env (when env is named and set), then
// names (sonames for the dynamic loader's search), then the files that
// match each of globs.
func Candidates(env string, names, globs []string) []string {
	var out []string
	if env != "" {
		if p := os.Getenv(env); p != "" {
			out = append(out, p)
		}
	}
	out = append(out, names...)
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		out = append(out, m...)
	}
	return out
}

// File is the file the dynamic loader mapped for the library, read from
// /proc/self/maps (a soname becomes the path of its file), or its Name
// where that cannot be told.
func (l *Lib) File() string {
	if strings.Contains(l.Name, "/") {
		return l.Name
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return l.Name
	}
	defer f.Close()
	base, _, _ := strings.Cut(l.Name, ".so")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && strings.Contains(filepath.Base(fields[5]), base+".so") {
			return fields[5]
		}
	}
	return l.Name
}

// CString reads the NUL-terminated string at p, at most max bytes: Go
// memory the caller keeps (an array a call filled) or C memory.
func CString(p *byte, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// CStringAt is CString for a C string at address addr, as an entry point
// returns one: memory the Go runtime does not manage and never moves.
func CStringAt(addr uintptr, max int) string {
	if addr == 0 {
		return ""
	}
	return CString((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), max) //nolint:govet // C memory
}

package nativelib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// libc is a library every Linux machine has, with entry points whose
// results the test knows.
const libc = "libc.so.6"

func TestOpenFirst(t *testing.T) {
	var strlen uintptr
	syms := []Symbol{{Name: "strlen", Addr: &strlen}}
	if !Supported {
		if _, err := OpenFirst([]string{libc}, syms); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), runtime.GOOS) {
			t.Errorf("on %s OpenFirst = %v, want ErrUnsupported naming the OS", runtime.GOOS, err)
		}
		return
	}
	var none uintptr
	for _, tc := range []struct {
		name  string
		names []string
		syms  []Symbol
		want  string   // the library opened; "" for an error
		says  []string // what the error names
	}{
		{"the first that loads", []string{"/nonexistent/libx.so.1", libc}, syms, libc, nil},
		{"every reason on one line", []string{"/nonexistent/libx.so.1", "libnosuch.so.7"}, syms, "",
			[]string{"/nonexistent/libx.so.1", "; ", "libnosuch.so.7"}},
		{"a missing entry point names the file and the symbol", []string{libc}, []Symbol{{Name: "strlen", Addr: &strlen}, {Name: "no_such_entry_point", Addr: &none}}, "",
			[]string{libc + " has no no_such_entry_point"}},
		{"nothing to try", nil, syms, "", []string{"no candidate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := OpenFirst(tc.names, tc.syms)
			if tc.want != "" {
				if err != nil || l.Name != tc.want || strlen == 0 {
					t.Fatalf("OpenFirst = %v, %v; want %s with strlen resolved", l, err, tc.want)
				}
				return
			}
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("OpenFirst error = %q, want one line", err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
}

func TestCallAndStrings(t *testing.T) {
	if !Supported {
		t.Skipf("no native libraries on %s (TestOpenFirst checks the error)", runtime.GOOS)
	}
	var strlen, getenv uintptr
	l, err := Open(libc, []Symbol{{Name: "strlen", Addr: &strlen}, {Name: "getenv", Addr: &getenv}})
	if err != nil {
		t.Fatal(err)
	}
	s := []byte("seven!!\x00")
	if n := Call(strlen, uintptr(unsafe.Pointer(&s[0]))); n != 7 {
		t.Errorf("strlen = %d, want 7", n)
	}
	args := []uintptr{uintptr(unsafe.Pointer(&s[0]))}
	if n := CallArgs(strlen, args); n != 7 {
		t.Errorf("strlen through CallArgs = %d, want 7", n)
	}
	if got := CString(&s[0], 3); got != "sev" {
		t.Errorf("CString at most 3 = %q", got)
	}
	t.Setenv("NATIVELIB_TEST", "value in C memory")
	name := []byte("NATIVELIB_TEST\x00")
	if got := CStringAt(Call(getenv, uintptr(unsafe.Pointer(&name[0]))), 1024); got != "value in C memory" {
		t.Errorf("getenv read back %q", got)
	}
	if CStringAt(0, 8) != "" || CString(nil, 8) != "" {
		t.Error("a NULL string is not empty")
	}
	if l.Lookup("strlen") != strlen || l.Lookup("no_such_entry_point") != 0 {
		t.Error("Lookup")
	}
	// A double in a register beside an int: ldexp(3, 2) = 12.
	var ldexp func(float64, int32) float64
	Bind(&ldexp, l.Lookup("ldexp"))
	if got := ldexp(3, 2); got != 12 {
		t.Errorf("ldexp(3, 2) through Bind = %v, want 12", got)
	}
	if f := l.File(); !strings.HasPrefix(f, "/") || !strings.Contains(filepath.Base(f), "libc") {
		t.Errorf("File() = %q, want the path of libc's file", f)
	}
}

func TestCandidates(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"liba.so.1", "liba.so.2", "libb.so"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("NATIVELIB_TEST_LIB", "/opt/mine/liba.so")
	for _, tc := range []struct {
		env  string
		want []string
	}{
		{"NATIVELIB_TEST_LIB", []string{"/opt/mine/liba.so", "liba.so.1", filepath.Join(dir, "liba.so.1"), filepath.Join(dir, "liba.so.2")}},
		{"NATIVELIB_TEST_UNSET", []string{"liba.so.1", filepath.Join(dir, "liba.so.1"), filepath.Join(dir, "liba.so.2")}},
		{"", []string{"liba.so.1", filepath.Join(dir, "liba.so.1"), filepath.Join(dir, "liba.so.2")}},
	} {
		got := Candidates(tc.env, []string{"liba.so.1"}, []string{filepath.Join(dir, "liba.so*"), filepath.Join(dir, "nothing*")})
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("Candidates(%q) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// TestOpenReasonNeverEmpty: the reason of a failed open is never empty,
// however the goroutines move between threads (issue 41: `cuda check`
// said "no CUDA driver found (libcuda.so.1): " with no reason in 8 of 150
// runs). dlerror's message is the calling thread's: read on another
// thread than the failed dlopen's, it is empty. Many goroutines open a
// missing library at once while others keep every thread busy, so that
// the scheduler moves them between the dlopen and the dlerror if it can.
func TestOpenReasonNeverEmpty(t *testing.T) {
	if !Supported {
		t.Skipf("no native libraries on %s (TestOpenFirst checks ErrUnsupported)", runtime.GOOS)
	}
	const goroutines, tries = 16, 300
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range runtime.GOMAXPROCS(0) * 2 {
		busy.Add(1)
		go func() {
			defer busy.Done()
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
				for range 1000 {
					x *= 3
				}
			}
		}()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	empty, total := 0, 0
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var strlen uintptr
			for i := range tries {
				name := fmt.Sprintf("/nonexistent/libnosuch-%d-%d.so", g, i)
				_, err := Open(name, []Symbol{{Name: "strlen", Addr: &strlen}})
				mu.Lock()
				total++
				if err == nil || !strings.Contains(err.Error(), name) {
					empty++
					if empty <= 3 {
						t.Errorf("Open(%s) = %v; want a reason naming the file", name, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	busy.Wait()
	if empty > 0 {
		t.Errorf("%d of %d failed opens without the loader's reason", empty, total)
	}
}

//go:build linux

package cuda

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// The fake driver (testdata/fakecuda.c), built once per test binary with
// the machine's cc and loaded through openLibrary, the path Open takes
// with libcuda.so.1.
var (
	fakeOnce sync.Once
	fakeLib  *driverLib
	fakeErr  error
	fakeDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// fake is the test's handle on the fake driver's controls.
type fake struct {
	t                                                                *testing.T
	lib                                                              *driverLib
	reset, fail, limit, log, live, liveDetail, forget, hang, retains uintptr
}

func loadFake(t *testing.T) *fake {
	t.Helper()
	fakeOnce.Do(func() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			fakeErr = err
			return
		}
		if fakeDir, fakeErr = os.MkdirTemp("", "fakecuda"); fakeErr != nil {
			return
		}
		so := filepath.Join(fakeDir, "libfakecuda.so")
		out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", so, "testdata/fakecuda.c").CombinedOutput()
		if err != nil {
			fakeErr = &exec.Error{Name: cc + " -shared -fPIC testdata/fakecuda.c: " + strings.TrimSpace(string(out)), Err: err}
			return
		}
		fakeLib, fakeErr = openLibrary(so)
	})
	if fakeErr != nil {
		t.Fatalf("the fake CUDA driver needs the C compiler cc (part of this project's machines): %v", fakeErr)
	}
	f := &fake{t: t, lib: fakeLib}
	for _, s := range []struct {
		name string
		p    *uintptr
	}{{"fake_reset", &f.reset}, {"fake_fail", &f.fail}, {"fake_set_mem_limit", &f.limit}, {"fake_log", &f.log}, {"fake_live", &f.live}, {"fake_live_detail", &f.liveDetail}, {"fake_forget_live", &f.forget}, {"fake_hang_init", &f.hang}, {"fake_ctx_retains", &f.retains}} {
		a, err := dlsym(fakeLib.handle, s.name)
		if err != nil {
			t.Fatal(err)
		}
		*s.p = a
	}
	ccall(f.reset)
	return f
}

// Fail makes the after+1-th next call of call fail with code.
func (f *fake) Fail(call string, after, code int) {
	b := append([]byte(call), 0)
	ccall(f.fail, uintptr(unsafe.Pointer(&b[0])), uintptr(after), uintptr(code))
}

// HangInit makes cuInit wait (on) until called again with false.
func (f *fake) HangInit(on bool) {
	v := uintptr(0)
	if on {
		v = 1
	}
	ccall(f.hang, v)
}

// Retains counts the primary-context retains that ever succeeded.
func (f *fake) Retains() int { return int(ccall(f.retains)) }

func (f *fake) SetMemLimit(n int64) { ccall(f.limit, uintptr(n)) }

// Log is the fake's operation log since the last reset.
func (f *fake) Log() string {
	var p *byte
	ccall(f.log, uintptr(unsafe.Pointer(&p)))
	return cString(p, 1<<30)
}

func (f *fake) Live() (int, string) {
	var p *byte
	ccall(f.liveDetail, uintptr(unsafe.Pointer(&p)))
	return int(ccall(f.live)), cString(p, 256)
}

// open opens the fake's device and registers a check that, once the test
// has closed everything, nothing is left allocated.
func (f *fake) open() *Context {
	f.t.Helper()
	c, err := openContext(context.Background(), f.lib, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		c.Close()
		if n, what := f.Live(); n != 0 {
			f.t.Errorf("after Close the fake driver holds %s", what)
		}
	})
	return c
}

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

	"github.com/headspace-bench/headspace/internal/nativelib"
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
	if _, err := nativelib.Open(fakeLib.path, []nativelib.Symbol{{Name: "fake_reset", Addr: &f.reset}, {Name: "fake_fail", Addr: &f.fail}, {Name: "fake_set_mem_limit", Addr: &f.limit}, {Name: "fake_log", Addr: &f.log}, {Name: "fake_live", Addr: &f.live}, {Name: "fake_live_detail", Addr: &f.liveDetail}, {Name: "fake_forget_live", Addr: &f.forget}, {Name: "fake_hang_init", Addr: &f.hang}, {Name: "fake_ctx_retains", Addr: &f.retains}}); err != nil {
		t.Fatal(err)
	}
	nativelib.Call(f.reset)
	return f
}

// Fail makes the after+1-th next call of call fail with code.
func (f *fake) Fail(call string, after, code int) {
	b := append([]byte(call), 0)
	nativelib.Call(f.fail, uintptr(unsafe.Pointer(&b[0])), uintptr(after), uintptr(code))
}

// HangInit makes cuInit wait (on) until called again with false.
func (f *fake) HangInit(on bool) {
	v := uintptr(0)
	if on {
		v = 1
	}
	nativelib.Call(f.hang, v)
}

// Retains counts the primary-context retains that ever succeeded.
func (f *fake) Retains() int { return int(nativelib.Call(f.retains)) }

func (f *fake) SetMemLimit(n int64) { nativelib.Call(f.limit, uintptr(n)) }

// Log is the fake's operation log since the last reset.
func (f *fake) Log() string {
	var p *byte
	nativelib.Call(f.log, uintptr(unsafe.Pointer(&p)))
	return nativelib.CString(p, 1<<30)
}

func (f *fake) Live() (int, string) {
	var p *byte
	nativelib.Call(f.liveDetail, uintptr(unsafe.Pointer(&p)))
	return int(nativelib.Call(f.live)), nativelib.CString(p, 256)
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

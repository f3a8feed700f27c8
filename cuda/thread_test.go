package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestThread(t *testing.T) {
	if _, err := newThread(func() error { return errors.New("no device") }); err == nil || err.Error() != "no device" {
		t.Errorf("a failed setup = %v", err)
	}
	th, err := newThread(func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	th.do(func() { n++ })
	th.do(func() { n++ })
	if n != 2 {
		t.Errorf("%d of 2 calls ran", n)
	}
	panics := func(f func()) (p any) {
		defer func() { p = recover() }()
		f()
		return nil
	}
	if p := panics(func() { th.do(func() { panic("boom") }) }); p == nil || !strings.Contains(p.(string), "on the driver thread: boom") {
		t.Errorf("a panic on the thread came back as %v", p)
	}
	th.do(func() { n++ }) // the thread survives it
	th.stop()
	if p := panics(func() { th.do(func() { n++ }) }); p == nil || n != 3 {
		t.Errorf("a call after stop: panic %v, %d calls ran", p, n)
	}
}

// BenchmarkThreadCall is the cost of one round trip to the driver thread,
// which Upload, Step and Free each make once:
// go test -run=^$ -bench=ThreadCall ./cuda
func BenchmarkThreadCall(b *testing.B) {
	th, err := newThread(func() error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	defer th.stop()
	f := func() {}
	b.ReportAllocs()
	for b.Loop() {
		th.do(f)
	}
}

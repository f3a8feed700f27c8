//go:build linux

package cuda

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/batching"
)

// TestGraphsReplay: with Graphs the device captures each launch list once
// per batch buffer and replays it: every step still runs the plan's
// conversion and step launches in order, with the pointers of the batch it
// was given (the graph's copy of the arguments), and nothing is captured
// again for a buffer seen before. Close destroys every graph (the fake's
// live count, checked by open's cleanup).
func TestGraphsReplay(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 12), Pinned: true, Graphs: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seen := map[uint64]bool{}
	lines := 0
	for i := range 6 {
		buf, err := d.Upload(ctx, testBatch(t, batching.Uint8, 2, 12, i))
		if err != nil {
			t.Fatal(err)
		}
		b := buf.(*buffer)
		if err := d.Step(ctx, buf); err != nil {
			t.Fatal(err)
		}
		all := parseLog(f.Log())
		now := all[lines:]
		lines = len(all)
		ls := launches(now)
		hex := func(p uint64) string { return fmt.Sprintf("8:%x", p) }
		if len(ls) != 3 || ls[0].word != "convert" || ls[1].word != "step" || ls[2].word != "step" {
			t.Fatalf("step %d launched %v, want convert, step, step", i, ls)
		}
		for _, l := range ls {
			if l.kv["graph"] != "1" {
				t.Errorf("step %d: %s was not launched from a graph", i, l.word)
			}
		}
		if p := strings.Split(ls[0].kv["params"], ","); p[0] != hex(b.ptr) {
			t.Errorf("step %d: convert read %s, the batch is at %s", i, p[0], hex(b.ptr))
		}
		if p := strings.Split(ls[1].kv["params"], ","); p[0] != hex(d.inPtr) || p[1] != hex(b.ptr+uint64(b.labelOff)) {
			t.Errorf("step %d: step read %v, want input %s and labels %s", i, p[:2], hex(d.inPtr), hex(b.ptr+uint64(b.labelOff)))
		}
		captures := now[0].count(now, "capture-begin")
		if want := map[bool]int{false: 2, true: 0}[seen[b.ptr]]; captures != want {
			t.Errorf("step %d: %d captures, want %d (buffer seen before: %v)", i, captures, want, seen[b.ptr])
		}
		seen[b.ptr] = true
		d.Free(buf)
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.Steps != 6 || s.ConvertTime <= 0 || s.StepTime <= 0 {
		t.Errorf("stats %+v", s)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGraphsErrors: a failing capture or instantiation is the step's
// error, names the call, and leaks nothing.
func TestGraphsErrors(t *testing.T) {
	for _, call := range []string{"cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags", "cuGraphLaunch"} {
		t.Run(call, func(t *testing.T) {
			f := loadFake(t)
			c := f.open()
			d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 12), Pinned: true, Graphs: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			buf, err := d.Upload(ctx, testBatch(t, batching.Float32, 2, 12, 0))
			if err != nil {
				t.Fatal(err)
			}
			f.Fail(call, 0, 999)
			if err := d.Step(ctx, buf); err == nil || !strings.Contains(err.Error(), call) {
				t.Errorf("Step = %v, want an error naming %s", err, call)
			}
			d.Free(buf)
			d.Close()
		})
	}
}

// BenchmarkStepGraphs is BenchmarkStep's loop with and without graphs on
// the fake driver: what the binding costs per step on the host (the fake
// runs nothing, so this is no GPU figure).
func BenchmarkStepGraphs(b *testing.B) {
	for _, graphs := range []bool{false, true} {
		b.Run(fmt.Sprintf("graphs=%v", graphs), func(b *testing.B) {
			f := loadFake(&testing.T{})
			c, err := openContext(context.Background(), f.lib, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			d, err := NewDevice(c, DeviceConfig{Plan: testPlan(2, 12), Pinned: true, Graphs: graphs})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			batch := testBatch(b, batching.Float32, 2, 12, 0)
			b.ReportAllocs()
			for range b.N {
				buf, err := d.Upload(ctx, batch)
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Step(ctx, buf); err != nil {
					b.Fatal(err)
				}
				d.Free(buf)
			}
		})
	}
}

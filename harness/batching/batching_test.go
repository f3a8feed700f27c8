package batching

import (
	"strings"
	"sync"
	"testing"
)

func TestPoolReuses(t *testing.T) {
	p, err := NewPool(4, 6)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Get()
	if len(a.Data) != 24 || len(a.Labels) != 4 || a.Bytes() != 24*4+16 {
		t.Fatalf("batch shape: %d values, %d labels, %d bytes", len(a.Data), len(a.Labels), a.Bytes())
	}
	p.Put(a)
	if b := p.Get(); b != a {
		t.Error("pool did not reuse the released batch")
	}
	if p.Allocated() != 1 {
		t.Errorf("allocated %d, want 1", p.Allocated())
	}
	p.Put(&Batch{Size: 1, SampleLen: 6}) // wrong shape: dropped
	if b := p.Get(); b.Size != 4 {
		t.Error("pool returned a batch of another shape")
	}
}

func TestPoolConcurrent(t *testing.T) {
	p, _ := NewPool(2, 2)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b := p.Get()
				b.Data[0]++
				p.Put(b)
			}
		})
	}
	wg.Wait()
	if n := p.Allocated(); n < 1 || n > 8 {
		t.Errorf("allocated %d batches for 8 concurrent users", n)
	}
}

func TestPut(t *testing.T) {
	p, _ := NewPool(2, 3)
	b := p.Get()
	for _, tc := range []struct {
		j      int
		sample []float32
		want   string
	}{
		{0, []float32{1, 2, 3}, ""},
		{1, []float32{4, 5, 6}, ""},
		{2, []float32{1, 2, 3}, "out of range"},
		{-1, []float32{1, 2, 3}, "out of range"},
		{0, []float32{1, 2}, "has 2 values"},
	} {
		err := b.Put(tc.j, tc.sample, 7)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Put(%d, %v) = %v, want %q", tc.j, tc.sample, err, tc.want)
		}
	}
	if got := b.Data; got[0] != 1 || got[5] != 6 || b.Labels[1] != 7 {
		t.Errorf("batch after puts: %v %v", got, b.Labels)
	}
	if _, err := NewPool(0, 1); err == nil {
		t.Error("NewPool(0, 1) = nil error")
	}
	if _, err := NewPool(1, 0); err == nil {
		t.Error("NewPool(1, 0) = nil error")
	}
}

func TestPutAllocatesNothing(t *testing.T) {
	p, _ := NewPool(4, 1024)
	b := p.Get()
	s := make([]float32, 1024)
	if n := testing.AllocsPerRun(100, func() { _ = b.Put(2, s, 1) }); n != 0 {
		t.Errorf("Put allocates %v", n)
	}
}

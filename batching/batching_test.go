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

// TestDTypes checks each dtype's pool: the slice that holds the values,
// Bytes counting what is copied (1 byte a uint8 value, 4 a float32 value and
// label), Put and PutUint8 refusing the other dtype, and the pool keeping
// its dtype apart.
func TestDTypes(t *testing.T) {
	for _, tc := range []struct {
		dtype     DType
		name      string
		bytes     int64 // 4 samples of 6 values, 4 labels
		valueSize int
	}{
		{Float32, "float32", 4*6*4 + 4*4, 4},
		{Uint8, "uint8", 4*6 + 4*4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dtype.String() != tc.name || tc.dtype.Size() != tc.valueSize {
				t.Errorf("String %q Size %d", tc.dtype, tc.dtype.Size())
			}
			p, err := NewPoolOf(tc.dtype, 4, 6)
			if err != nil {
				t.Fatal(err)
			}
			if p.DType() != tc.dtype {
				t.Errorf("pool dtype %v", p.DType())
			}
			b := p.Get()
			if b.DType != tc.dtype || b.Bytes() != tc.bytes || len(b.Labels) != 4 {
				t.Fatalf("batch dtype %v, %d bytes, want %d", b.DType, b.Bytes(), tc.bytes)
			}
			if (len(b.Data) == 24) != (tc.dtype == Float32) || (len(b.Pix) == 24) != (tc.dtype == Uint8) || len(b.Data)+len(b.Pix) != 24 {
				t.Fatalf("values in the wrong slice: %d float32, %d uint8", len(b.Data), len(b.Pix))
			}
			errF := b.Put(1, make([]float32, 6), 3)
			errU := b.PutUint8(1, []uint8{1, 2, 3, 4, 5, 6}, 3)
			if tc.dtype == Uint8 {
				if errF == nil || !strings.Contains(errF.Error(), "a float32 sample put into a uint8 batch") || errU != nil {
					t.Errorf("Put: %v, PutUint8: %v", errF, errU)
				}
				if s := b.SamplePix(1); s[0] != 1 || s[5] != 6 || b.Labels[1] != 3 {
					t.Errorf("slot 1 = %v, label %d", s, b.Labels[1])
				}
			} else if errU == nil || !strings.Contains(errU.Error(), "a uint8 sample put into a float32 batch") || errF != nil {
				t.Errorf("Put: %v, PutUint8: %v", errF, errU)
			}
			other := Float32
			if tc.dtype == Float32 {
				other = Uint8
			}
			p.Put(&Batch{Size: 4, SampleLen: 6, DType: other}) // another dtype: dropped
			p.Put(b)
			if got := p.Get(); got != b {
				t.Error("pool did not reuse its batch")
			}
			if got := p.Get(); got.DType != tc.dtype || p.Allocated() != 2 {
				t.Errorf("pool handed out a %v batch (allocated %d)", got.DType, p.Allocated())
			}
		})
	}
	if _, err := NewPoolOf(DType(7), 1, 1); err == nil {
		t.Error("NewPoolOf accepted an unknown dtype")
	}
	if s := DType(7).String(); s != "DType(7)" {
		t.Errorf("String = %q", s)
	}
}

func TestPutUint8Errors(t *testing.T) {
	p, _ := NewPoolOf(Uint8, 2, 3)
	b := p.Get()
	for _, tc := range []struct {
		j      int
		sample []uint8
		want   string
	}{
		{0, []uint8{1, 2, 3}, ""},
		{2, []uint8{1, 2, 3}, "out of range"},
		{-1, []uint8{1, 2, 3}, "out of range"},
		{0, []uint8{1, 2}, "has 2 values"},
	} {
		err := b.PutUint8(tc.j, tc.sample, 7)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("PutUint8(%d, %v) = %v, want %q", tc.j, tc.sample, err, tc.want)
		}
	}
}

func TestPutUint8AllocatesNothing(t *testing.T) {
	p, _ := NewPoolOf(Uint8, 4, 1024)
	b := p.Get()
	s := make([]uint8, 1024)
	if n := testing.AllocsPerRun(100, func() { _ = b.PutUint8(2, s, 1) }); n != 0 {
		t.Errorf("PutUint8 allocates %v", n)
	}
	p.Put(b)
	if n := testing.AllocsPerRun(100, func() { p.Put(p.Get()) }); n != 0 {
		t.Errorf("a recycled Get and Put allocate %v", n)
	}
}

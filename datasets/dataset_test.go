package datasets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSyntheticDeterministic(t *testing.T) {
	ds := Synthetic{Width: 64, Height: 32, Classes: 10, N: 100, Seed: 5}
	a, b := NewSample(64, 32), NewSample(64, 32)
	// Fill in different orders: same index, same bytes.
	for _, i := range []int{0, 99, 42} {
		if err := ds.Fill(i, a); err != nil {
			t.Fatal(err)
		}
		if err := ds.Fill(98, b); err != nil {
			t.Fatal(err)
		}
		if err := ds.Fill(i, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Image.Pix, b.Image.Pix) || a.Label != b.Label {
			t.Errorf("sample %d differs between fills", i)
		}
		if a.Label < 0 || a.Label >= 10 {
			t.Errorf("sample %d label %d out of [0,10)", i, a.Label)
		}
	}
	c := NewSample(64, 32)
	_ = ds.Fill(1, c)
	_ = ds.Fill(2, a)
	if bytes.Equal(a.Image.Pix, c.Image.Pix) {
		t.Error("samples 1 and 2 are identical")
	}
	other := ds
	other.Seed = 6
	_ = other.Fill(2, c)
	if bytes.Equal(a.Image.Pix, c.Image.Pix) {
		t.Error("seed does not change sample 2")
	}
}

func TestSyntheticErrors(t *testing.T) {
	ds := Synthetic{Width: 8, Height: 8, Classes: 2, N: 3}
	for _, tc := range []struct {
		i    int
		buf  *Sample
		want string
	}{
		{-1, NewSample(8, 8), "out of range"},
		{3, NewSample(8, 8), "out of range"},
		{0, NewSample(8, 4), "buffer is 8x4"},
	} {
		err := ds.Fill(tc.i, tc.buf)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fill(%d) = %v, want error containing %q", tc.i, err, tc.want)
		}
	}
	for _, bad := range []Synthetic{{Width: 0, Height: 1, Classes: 1, N: 1}, {Width: 1, Height: 1, Classes: 0, N: 1}, {Width: 1, Height: 1, Classes: 1, N: -1}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", bad)
		}
	}
}

func TestSyntheticFillAllocatesNothing(t *testing.T) {
	ds := DefaultSynthetic()
	s := NewSample(ds.Width, ds.Height)
	if n := testing.AllocsPerRun(5, func() { _ = ds.Fill(7, s) }); n != 0 {
		t.Errorf("Fill allocates %v times per sample", n)
	}
}

func ExampleSynthetic() {
	ds := Synthetic{Width: 4, Height: 2, Classes: 10, N: 100, Seed: 1}
	s := NewSample(4, 2)
	if err := ds.Fill(7, s); err != nil {
		panic(err)
	}
	fmt.Println(len(s.Image.Pix), s.Label >= 0 && s.Label < 10)
	// Output: 24 true
}

func BenchmarkSyntheticFill(b *testing.B) {
	ds := DefaultSynthetic()
	s := NewSample(ds.Width, ds.Height)
	b.ReportAllocs()
	b.SetBytes(int64(len(s.Image.Pix)))
	i := 0
	for b.Loop() {
		_ = ds.Fill(i%ds.N, s)
		i++
	}
}

func BenchmarkFillContent(b *testing.B) {
	for _, content := range Contents {
		for _, n := range []int{256, 1024} {
			b.Run(fmt.Sprintf("%s/%d", content, n), func(b *testing.B) {
				ds := Synthetic{Width: n, Height: n, Classes: 10, N: 1 << 20, Seed: 1, Content: content}
				s := NewSample(n, n)
				b.SetBytes(int64(n * n * 3))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if err := ds.Fill(i%ds.N, s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// FillContext draws the bytes Fill draws, a chunk at a time, and stops on
// an ended context (issue 21, item 8).
func TestSyntheticFillContext(t *testing.T) {
	s := Synthetic{N: 2, Width: 1500, Height: 1000, Classes: 10, Seed: 3} // 4.5 MB: two chunks
	a, b := NewSample(s.Width, s.Height), NewSample(s.Width, s.Height)
	if err := s.Fill(1, a); err != nil {
		t.Fatal(err)
	}
	if err := s.FillContext(context.Background(), 1, b); err != nil || !bytes.Equal(a.Image.Pix, b.Image.Pix) || a.Label != b.Label {
		t.Fatalf("FillContext = %v, or its sample differs from Fill's", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.FillContext(ctx, 1, b); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

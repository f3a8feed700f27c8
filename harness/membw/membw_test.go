package membw

import (
	"context"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512K", 512 << 10, true},
		{"32768K", 32 << 20, true},
		{"16M", 16 << 20, true},
		{"64", 64, true},
		{"K", 0, false},
		{"-1K", 0, false},
	} {
		got, ok := parseSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseSize(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBufferSize(t *testing.T) {
	if n := BufferSize(); n < MinBuffer || n > MaxBuffer {
		t.Errorf("BufferSize() = %d, want in [%d, %d]", n, MinBuffer, MaxBuffer)
	}
}

// TestCopy: a small copy reports the settings it ran with and a positive,
// finite bandwidth; bad settings and a cancelled context are errors.
func TestCopy(t *testing.T) {
	r, err := Copy(context.Background(), Config{Workers: 2, Buffer: 1 << 20, Reps: 2, Trials: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Workers != 2 || r.Buffer != 1<<20 || r.Reps != 2 || r.Trials != 2 || !(r.BytesPerSec > 0) || r.BytesPerSec > 1e15 {
		t.Errorf("Copy = %+v", r)
	}
	if _, err := Copy(context.Background(), Config{Workers: 0}); err == nil {
		t.Error("0 workers: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Copy(ctx, Config{Workers: 1, Buffer: 1 << 10}); err == nil {
		t.Error("a cancelled context: no error")
	}
}

func TestFill(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 3 << 20} {
		b := make([]byte, n)
		fill(b)
		for j, v := range b {
			if want := byte((j%4096)*7 + 1); v != want {
				t.Fatalf("fill(%d): byte %d is %d, want %d", n, j, v, want)
			}
		}
	}
}

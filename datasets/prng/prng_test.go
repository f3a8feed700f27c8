package prng

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

func TestDeterministicStreams(t *testing.T) {
	a, b, c := New(1, 7), New(1, 7), New(1, 8)
	same, diff := 0, 0
	for range 1000 {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		if x == y {
			same++
		}
		if x != z {
			diff++
		}
	}
	if same != 1000 {
		t.Errorf("same (seed, stream) diverged: %d of 1000 equal", same)
	}
	if diff < 999 {
		t.Errorf("streams 7 and 8 agree too often: %d of 1000 differ", diff)
	}
}

// TestFillMatchesUint64 checks that Fill's unrolled loop produces the same
// bytes as successive Uint64 calls, whatever the length.
func TestFillMatchesUint64(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 100, 4096} {
		a, b := New(3, uint64(n)), New(3, uint64(n))
		got := make([]byte, n)
		a.Fill(got)
		want := make([]byte, 0, n+8)
		for len(want) < n {
			v := b.Uint64()
			for k := 0; k < 8; k++ {
				want = append(want, byte(v>>(8*k)))
			}
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d: byte %d = %d, want %d", n, i, got[i], want[i])
			}
		}
	}
}

func TestUniformity(t *testing.T) {
	s := New(42, 0)
	const n = 1 << 20
	b := make([]byte, n)
	s.Fill(b)
	var counts [256]int
	for _, v := range b {
		counts[v]++
	}
	// chi-square with 255 degrees of freedom: mean 255, sd ~22.6.
	exp := float64(n) / 256
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		chi += d * d / exp
	}
	if chi > 255+6*22.6 {
		t.Errorf("byte histogram chi-square %.1f is far from uniform", chi)
	}
	for _, k := range []int{1, 2, 3, 10, 769} {
		seen := make([]int, k)
		for range 10000 * k {
			v := s.IntN(k)
			if v < 0 || v >= k {
				t.Fatalf("IntN(%d) = %d", k, v)
			}
			seen[v]++
		}
		for v, c := range seen {
			if math.Abs(float64(c)-10000) > 600 {
				t.Errorf("IntN(%d): value %d seen %d times, want ~10000", k, v, c)
			}
		}
	}
	for range 10000 {
		f := s.Float64()
		if f < 0 || f >= 1 {
			t.Fatalf("Float64 = %v", f)
		}
	}
}

func BenchmarkFill3MiB(b *testing.B) {
	buf := make([]byte, 1024*1024*3)
	s := New(1, 1)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		s.Fill(buf)
	}
}

// BenchmarkFill3MiBStdlib fills the same 3 MiB with math/rand/v2's PCG
// (eight bytes a Uint64) and ChaCha8 (its Read), the alternatives the
// package doc compares wyrand with.
func BenchmarkFill3MiBStdlib(b *testing.B) {
	buf := make([]byte, 1024*1024*3)
	b.Run("pcg", func(b *testing.B) {
		p := rand.NewPCG(1, 1)
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			for i := 0; i+8 <= len(buf); i += 8 {
				binary.LittleEndian.PutUint64(buf[i:], p.Uint64())
			}
		}
	})
	b.Run("chacha8", func(b *testing.B) {
		c := rand.NewChaCha8([32]byte{1})
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			c.Read(buf)
		}
	})
}

// TestStateSkipAt checks that At(State(), k) is the k-th draw from now and
// that Skip(n) lands where n draws do.
func TestStateSkipAt(t *testing.T) {
	a, b := New(9, 4), New(9, 4)
	st := a.State()
	for k := range uint64(100) {
		if got, want := At(st, k), a.Uint64(); got != want {
			t.Fatalf("At(state, %d) = %#x, draw %d = %#x", k, got, k, want)
		}
	}
	b.Skip(100)
	if a.Uint64() != b.Uint64() {
		t.Fatal("Skip(100) is not 100 draws")
	}
}

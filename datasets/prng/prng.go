// Package prng is the fast, seedable pseudo-random source behind every random
// draw in headspace: the bytes of a synthetic image, its label, the offset of
// a random crop and the pixels of a random mask.
//
// A Source is wyrand (Wang Yi's 64-bit generator): one add and one 64×64→128
// multiply per 64 bits, fast enough that filling a 3 MiB raw image costs
// well under a millisecond, and small enough (8 bytes) to live on the stack,
// so seeding one per sample allocates nothing. Sources are derived from a
// (seed, stream) pair with SplitMix64, so sample i of a dataset draws the same
// numbers whichever worker, and in whichever order, produces it.
//
// It is not cryptographic, and it is not math/rand/v2's PCG or ChaCha8 on
// purpose: those cost 2.5–7× more per byte (`go test ./datasets/prng -bench
// Fill3MiB -count 3` on a shared 2-core machine: wyrand 0.29–0.53 ms for 3
// MiB, PCG 1.3–1.4 ms, ChaCha8 2.1–3.3 ms), and the raw-data stage of the
// document's pipeline must measure "reading raw data", not the generator.
package prng

import (
	"encoding/binary"
	"math/bits"
)

// Source is a wyrand generator. The zero value is usable but every zero
// Source yields the same sequence; use New to derive independent streams.
type Source struct{ state uint64 }

// New returns the Source for stream of seed: the same pair always gives the
// same sequence, and different pairs give unrelated ones.
func New(seed, stream uint64) Source {
	return Source{state: mix(mix(seed) ^ (stream + 0x9e3779b97f4a7c15))}
}

// mix is SplitMix64's finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Uint64 returns the next 64 random bits.
func (s *Source) Uint64() uint64 {
	s.state += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(s.state, s.state^0xe7037ed1a0b428db)
	return hi ^ lo
}

// IntN returns a uniform int in [0, n) by Lemire's multiply-shift with
// rejection, so it is exactly uniform. It panics if n <= 0.
func (s *Source) IntN(n int) int {
	if n <= 0 {
		panic("prng: IntN with n <= 0")
	}
	bound := uint64(n)
	hi, lo := bits.Mul64(s.Uint64(), bound)
	if lo < bound {
		thresh := -bound % bound
		for lo < thresh {
			hi, lo = bits.Mul64(s.Uint64(), bound)
		}
	}
	return int(hi)
}

// Float64 returns a uniform float64 in [0, 1) with 53 random bits.
func (s *Source) Float64() float64 {
	return float64(s.Uint64()>>11) * (1.0 / (1 << 53))
}

// Fill fills b with random bytes, eight at a time.
func (s *Source) Fill(b []byte) {
	st := s.state
	for len(b) >= 32 {
		st += 0xa0761d6478bd642f
		h0, l0 := bits.Mul64(st, st^0xe7037ed1a0b428db)
		st += 0xa0761d6478bd642f
		h1, l1 := bits.Mul64(st, st^0xe7037ed1a0b428db)
		st += 0xa0761d6478bd642f
		h2, l2 := bits.Mul64(st, st^0xe7037ed1a0b428db)
		st += 0xa0761d6478bd642f
		h3, l3 := bits.Mul64(st, st^0xe7037ed1a0b428db)
		binary.LittleEndian.PutUint64(b[0:8], h0^l0)
		binary.LittleEndian.PutUint64(b[8:16], h1^l1)
		binary.LittleEndian.PutUint64(b[16:24], h2^l2)
		binary.LittleEndian.PutUint64(b[24:32], h3^l3)
		b = b[32:]
	}
	s.state = st
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, s.Uint64())
		b = b[8:]
	}
	if len(b) > 0 {
		v := s.Uint64()
		for i := range b {
			b[i] = byte(v)
			v >>= 8
		}
	}
}

// State returns the generator's state: the next draw is the wyrand output
// of State()+(k+1)·0xa0761d6478bd642f for the k-th draw from now (k from
// 0), so a kernel can make the k-th draw of a stream without the ones
// before it (the device transform's mask, cuda/kernels).
func (s *Source) State() uint64 { return s.state }

// Skip advances the generator past n draws, as n calls of Uint64 would.
func (s *Source) Skip(n uint64) { s.state += n * 0xa0761d6478bd642f }

// At returns the k-th draw (k from 0) of a Source whose State is state,
// without advancing anything: what the k-th Uint64 call would return.
func At(state, k uint64) uint64 {
	st := state + (k+1)*0xa0761d6478bd642f
	hi, lo := bits.Mul64(st, st^0xe7037ed1a0b428db)
	return hi ^ lo
}

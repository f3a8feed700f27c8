package transforms

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// TestUnpackRGB checks the word-at-a-time unpacker against the definition,
// pixel by pixel, for counts around its four-pixel blocks.
func TestUnpackRGB(t *testing.T) {
	for n := 0; n <= 13; n++ {
		src := make([]byte, 3*n)
		for i := range src {
			src[i] = byte(7*i + 3)
		}
		dst := make([]byte, 4*n)
		for i := range dst {
			dst[i] = 0x5a // must all be overwritten
		}
		unpackRGB(dst, src)
		for p := 0; p < n; p++ {
			want := [4]byte{src[3*p], src[3*p+1], src[3*p+2], 0xff}
			if got := [4]byte(dst[4*p : 4*p+4]); got != want {
				t.Fatalf("%d pixels: pixel %d = %v, want %v", n, p, got, want)
			}
		}
	}
}

// unpackRGBContext converts as unpackRGB does, chunk by chunk, and stops
// at once on an ended context (issue 21, item 8).
func TestUnpackRGBContext(t *testing.T) {
	const px = unpackChunk/3*2 + 5 // two whole chunks and a ragged tail
	src := make([]byte, 3*px)
	for i := range src {
		src[i] = byte(i * 7)
	}
	want, got := make([]byte, 4*px), make([]byte, 4*px)
	unpackRGB(want, src)
	if err := unpackRGBContext(context.Background(), got, src); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("unpackRGBContext = %v, or bytes differ from unpackRGB", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := unpackRGBContext(ctx, got, src); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	var tr Transform = newNaive(Config{Crop: 16, MaskRatio: 0.25})
	img := &datasets.Image{Width: 64, Height: 64, Pix: make([]byte, 64*64*3)}
	rng := prng.New(1, 1)
	if err := tr.(Interruptible).ApplyContext(ctx, make([]float32, 3*16*16), img, &rng); !errors.Is(err, context.Canceled) {
		t.Errorf("ApplyContext cancelled: %v, want context.Canceled", err)
	}
}

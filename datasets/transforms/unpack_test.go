package transforms

import "testing"

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

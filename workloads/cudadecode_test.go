package workloads

import (
	"path/filepath"
	"testing"
)

// TestCUDADecodeCodec: what a CUDADecode's records hold of its outcome
// (the decoder, the batch, the files' size, each batch's rate), encoded
// then decoded, is itself.
func TestCUDADecodeCodec(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    CUDADecodeOutcome
	}{
		{"nvjpeg", CUDADecodeOutcome{Decoder: DecodeNvjpeg, Batch: 256, Setup: CUDADecodeSetup{Width: 500, Height: 375}, Rates: []float64{3412.5657894736842, 3390.1, 4000}}},
		{"turbojpeg, one batch", CUDADecodeOutcome{Decoder: DecodeTurbo, Batch: 4, Setup: CUDADecodeSetup{Width: 5, Height: 3}, Rates: []float64{1.2345678901234567e+06}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, CUDADecodeCodec, tc.o) })
	}
	if recs := CUDADecodeCodec.Encode(CUDADecodeOutcome{Decoder: DecodeNvjpeg, Batch: 4}); len(recs) != 0 {
		t.Errorf("no rates encode as %d records, want none", len(recs))
	}
}

// TestCUDADecodeCodecCommittedFiles: the committed results of cuda
// decode on a real GPU (nvJPEG) and beside it (libjpeg-turbo) decode, and
// encode as their records again.
func TestCUDADecodeCodecCommittedFiles(t *testing.T) {
	for _, tc := range []struct{ name, decoder string }{{"cuda-decode-natural.txt", DecodeNvjpeg}, {"cuda-decode-turbojpeg.txt", DecodeTurbo}} {
		t.Run(tc.name, func(t *testing.T) {
			o := reencodes(t, CUDADecodeCodec, filepath.Join("..", "results", "gpu", "nvidia-h200-3fcbbc1", tc.name))
			if o.Decoder != tc.decoder || len(o.Rates) == 0 {
				t.Errorf("decoder %s, %d rates: want %s, some", o.Decoder, len(o.Rates), tc.decoder)
			}
		})
	}
}

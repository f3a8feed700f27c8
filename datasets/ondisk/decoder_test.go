package ondisk

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
)

// TestDecoderTurbo reads a JPEG dataset with both decoders: the same
// labels, pixels within rounding of each other, no allocation per sample
// with TurboJPEG, and the decoder's name with libjpeg-turbo's version. It
// fails, not skips, without libturbojpeg0 (make test installs it).
func TestDecoderTurbo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	src := datasets.Synthetic{Width: 96, Height: 64, Classes: 5, N: 4, Seed: 2, Content: datasets.ContentNatural}
	if _, err := Write(context.Background(), dir, src, WriteOptions{Format: "jpeg", Layout: "shards", ShardSize: 3}); err != nil {
		t.Fatal(err)
	}
	goDS, err := OpenWith(dir, Options{Decoder: DecoderGo})
	if err != nil {
		t.Fatal(err)
	}
	defer goDS.Close()
	tj, err := OpenWith(dir, Options{Decoder: DecoderTurbo})
	if err != nil {
		t.Fatal(err)
	}
	defer tj.Close()
	if name := tj.Decoder(); !strings.HasPrefix(name, "turbojpeg libjpeg-turbo ") || strings.HasSuffix(name, "unknown") {
		t.Errorf("Decoder() = %q, want turbojpeg with libjpeg-turbo's version", name)
	}
	if name, err := DecoderName(DecoderTurbo); err != nil || name != tj.Decoder() {
		t.Errorf("DecoderName = %q, %v; want %q", name, err, tj.Decoder())
	}
	a, b := datasets.NewSample(96, 64), datasets.NewSample(96, 64)
	for i := range src.N {
		if err := goDS.Fill(i, a); err != nil {
			t.Fatal(err)
		}
		if err := tj.Fill(i, b); err != nil {
			t.Fatal(err)
		}
		if a.Label != b.Label {
			t.Errorf("sample %d: labels %d and %d", i, a.Label, b.Label)
		}
		var diff int
		for k := range a.Image.Pix {
			d := int(a.Image.Pix[k]) - int(b.Image.Pix[k])
			diff += max(d, -d)
		}
		if mean := float64(diff) / float64(len(a.Image.Pix)); mean > 4 {
			t.Errorf("sample %d: decoders differ by %.2f levels on average", i, mean)
		}
	}
	data, err := tj.Fetch(context.Background(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 200 runs: under -race, sync.Pool drops a quarter of its Puts on
	// purpose, and purego takes its call frames from one, so about half
	// a frame is remade per decode there; AllocsPerRun's whole-number
	// mean stays 0 unless every decode allocates (without -race, nothing
	// is dropped and any allocation shows).
	if n := testing.AllocsPerRun(200, func() {
		if err := tj.Decode(1, data, b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Decode with turbojpeg: %.1f allocations per sample, want 0", n)
	}
	bad := append([]byte(nil), data[:len(data)/2]...)
	if err := tj.Decode(1, bad, b); err == nil || !strings.Contains(err.Error(), "shard-000000.tar member 000001.jpg") {
		t.Errorf("truncated JPEG: %v, want an error naming the shard member", err)
	}
	if _, err := OpenWith(dir, Options{Decoder: "libjpeg"}); err == nil || !strings.Contains(err.Error(), `decoder "libjpeg"`) {
		t.Errorf("decoder libjpeg: %v", err)
	}
}

// Package datasets provides the samples that feed headspace's input pipeline.
//
// A Dataset is indexable: sample i is filled into a caller's buffer, and the
// same (seed, i) always gives the same bytes, whatever worker asks for it and
// in whatever order, so a run is reproducible at any worker count and two
// loaders (goroutine or process workers) can be compared batch for batch.
//
// Synthetic is the FakeDataset of "A Caching Strategy for Identifying
// Bottlenecks on the Data Input Pipeline": every sample is a W×H×3 image of
// uniform random bytes and a uniform label. Generating the bytes is real work
// that stands for reading raw data from storage; it is deliberately left in
// the measured path. With Content natural the images are drawn from the
// dead-leaves model instead (natural.go): they have the statistics of
// photographs, so they compress and decode like a real dataset's.
package datasets

import (
	"context"
	"fmt"

	"github.com/headspace-bench/headspace/datasets/prng"
)

// Image is an 8-bit RGB image stored row-major with interleaved channels
// (H×W×3, as numpy's and PIL's arrays are).
type Image struct {
	Width, Height int
	Pix           []uint8 // len = Width*Height*3
}

// NewImage allocates a w×h RGB image.
func NewImage(w, h int) *Image {
	return &Image{Width: w, Height: h, Pix: make([]uint8, w*h*3)}
}

// Sample is one raw item of a dataset: an image and its class label.
type Sample struct {
	Image Image
	Label int
}

// NewSample allocates a sample buffer for w×h images.
func NewSample(w, h int) *Sample {
	return &Sample{Image: *NewImage(w, h)}
}

// Dataset is a finite, indexable, deterministic source of raw samples.
type Dataset interface {
	// Len is the number of samples.
	Len() int
	// Shape is the width and height of every image.
	Shape() (w, h int)
	// Fill writes sample i into dst, whose image must have the dataset's
	// shape. It must be safe for concurrent use with distinct dst.
	Fill(i int, dst *Sample) error
}

// Synthetic is the document's FakeDataset: uniform random RGB bytes and a
// uniform label in [0, Classes), determined by (Seed, i).
type Synthetic struct {
	Width, Height int    // raw image size; the document uses 1024×1024, then 256×256
	Classes       int    // number of labels
	N             int    // number of samples; the document uses 10000
	Seed          uint64 // stream seed
	// Content is what the images show: ContentNoise ("" too), the
	// document's uniform random bytes, or ContentNatural, dead leaves.
	Content string
}

// DefaultSynthetic is the document's configuration: 10000 samples of
// 1024×1024 RGB, 10 classes.
func DefaultSynthetic() Synthetic {
	return Synthetic{Width: 1024, Height: 1024, Classes: 10, N: 10000, Seed: 1}
}

// Validate reports the first invalid field.
func (s Synthetic) Validate() error {
	switch {
	case s.Width <= 0 || s.Height <= 0:
		return fmt.Errorf("datasets: raw size %dx%d must be positive", s.Width, s.Height)
	case s.Classes <= 0:
		return fmt.Errorf("datasets: classes %d must be positive", s.Classes)
	case s.N <= 0:
		return fmt.Errorf("datasets: length %d must be positive", s.N)
	}
	if _, err := ParseContent(s.Content); err != nil {
		return fmt.Errorf("datasets: %v", err)
	}
	return nil
}

// Len implements Dataset.
func (s Synthetic) Len() int { return s.N }

// Shape implements Dataset.
func (s Synthetic) Shape() (int, int) { return s.Width, s.Height }

// Natural reports whether the images are ContentNatural.
func (s Synthetic) Natural() bool { return s.Content == ContentNatural }

// Fill implements Dataset. It allocates nothing (natural content keeps one
// scratch per concurrent caller, kept between calls).
func (s Synthetic) Fill(i int, dst *Sample) error {
	return s.FillContext(context.Background(), i, dst)
}

// fillChunk is how many bytes FillContext draws between looks at its
// context: 4 MiB, a multiple of the generator's 32-byte step, so the
// bytes are those of one Fill.
const fillChunk = 4 << 20

// FillContext is Fill that stops with ctx's error once ctx ends, looking
// at it every fillChunk bytes: a 16384² sample is 805 MB of draws.
func (s Synthetic) FillContext(ctx context.Context, i int, dst *Sample) error {
	if i < 0 || i >= s.N {
		return fmt.Errorf("datasets: sample %d out of range [0, %d)", i, s.N)
	}
	if dst.Image.Width != s.Width || dst.Image.Height != s.Height || len(dst.Image.Pix) != s.Width*s.Height*3 {
		return fmt.Errorf("datasets: sample %d: buffer is %dx%d (%d bytes), dataset is %dx%d",
			i, dst.Image.Width, dst.Image.Height, len(dst.Image.Pix), s.Width, s.Height)
	}
	r := prng.New(s.Seed, uint64(i))
	if s.Natural() {
		dst.Label = r.IntN(s.Classes)
		fillNatural(&r, &dst.Image)
		return nil
	}
	pix := dst.Image.Pix
	for len(pix) > fillChunk {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("datasets: sample %d: %w", i, err)
		}
		r.Fill(pix[:fillChunk])
		pix = pix[fillChunk:]
	}
	r.Fill(pix)
	dst.Label = r.IntN(s.Classes)
	return nil
}

// Encoded is a Dataset whose samples are stored encoded: Fetch reads sample
// i's bytes (into buf, grown if needed, returned), Decode turns such bytes
// into a sample. Fill = Fetch + Decode. Splitting the two lets a pipeline
// time storage (fetch) and decoding separately, and cache a sample's bytes.
type Encoded interface {
	Dataset
	// Fetch reads sample i's encoded bytes into buf, growing it if needed,
	// and returns them.
	Fetch(ctx context.Context, i int, buf []byte) ([]byte, error)
	// Decode turns sample i's bytes, as Fetch returned them, into dst. It
	// must be safe for concurrent use with distinct dst.
	Decode(i int, data []byte, dst *Sample) error
}

// Package ondisk stores a dataset on disk and reads it back: the synthetic
// samples written as raw bytes, PNG or JPEG, one file per sample or in
// WebDataset tar shards, with a JSON manifest; a reader that implements
// datasets.Dataset and datasets.Encoded (Fetch reads a sample's bytes, Decode
// turns them into pixels, with Go's decoders or libjpeg-turbo); the same
// reader over a dataset the user already has, an ImageFolder or WebDataset
// shards from any writer, by an index kept outside it (foreign.go); and
// page-cache control (Evict, Warm) so a run can read the files from a cold
// or a warm cache.
//
// Resolve inspects a dataset once into a Handle, which a run's checks,
// result-file settings and report share instead of inspecting it again.
// It lives here, beside InspectWith, because a Handle is that inspection kept:
// only this package knows a manifest, a user's index and a bucket's
// listing, and what it costs to look at each again.
//
// Uniform random bytes, the document's FakeDataset, compress terribly: a PNG
// of them is slightly larger than the raw bytes and a JPEG at quality 90 is
// 30% of them (the README's "Data on disk" has the measured sizes). The
// files are a worst case for size, and for decoding too (every JPEG block
// carries all its coefficients), not a picture of a natural-image dataset.
package ondisk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets"
)

// ManifestName is the manifest's file name inside a dataset directory.
const ManifestName = "manifest.json"

// FormatVersion is the manifest's format version; Open refuses others.
const FormatVersion = 1

// Formats are the sample encodings, Layouts the ways they are grouped.
var (
	Formats = []string{"raw", "png", "jpeg"}
	Layouts = []string{"files", "shards"}
)

// Manifest describes a written dataset. Every file of the dataset is listed
// with its size and SHA-256.
type Manifest struct {
	Version int    `json:"version"`
	Count   int    `json:"count"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Classes int    `json:"classes"`
	Seed    uint64 `json:"seed"`
	// Content is the synthetic images' content, datasets.ContentNatural,
	// or empty for the document's noise (manifests before it was added).
	Content   string `json:"content,omitempty"`
	Format    string `json:"format"`            // raw, png or jpeg
	Quality   int    `json:"quality,omitempty"` // JPEG quality, 1..100
	Layout    string `json:"layout"`            // files or shards
	ShardSize int    `json:"shard_size,omitempty"`
	// Labels holds every sample's class, so the files layout needs no
	// label files; shards also carry them as <key>.cls members.
	Labels []int  `json:"labels"`
	Files  []File `json:"files"`
}

// File is one file of a dataset: a sample (files layout) or a shard.
type File struct {
	Name   string `json:"name"` // slash-separated, relative to the dataset directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Ext is the file-name extension of the manifest's format, without the dot.
func (m *Manifest) Ext() string {
	switch m.Format {
	case "jpeg":
		return "jpg"
	case "png":
		return "png"
	}
	return "rgb"
}

// Key is sample i's key: zero-padded so that name order is index order.
func (m *Manifest) Key(i int) string {
	return fmt.Sprintf("%0*d", m.keyWidth(), i)
}

func (m *Manifest) keyWidth() int {
	w := 1
	for n := m.Count - 1; n >= 10; n /= 10 {
		w++
	}
	return max(w, 6)
}

// Shards is the number of shard files (0 in the files layout).
func (m *Manifest) Shards() int {
	if m.Layout != "shards" {
		return 0
	}
	return (m.Count + m.ShardSize - 1) / m.ShardSize
}

// Bytes is the total size of the dataset's files, manifest excluded.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// BytesPerSample is the mean size on disk of one sample, tar headers and
// label members included.
func (m *Manifest) BytesPerSample() float64 {
	return float64(m.Bytes()) / float64(m.Count)
}

// Validate reports the first field that is out of range or inconsistent.
func (m *Manifest) Validate() error {
	switch {
	case m.Version != FormatVersion:
		return fmt.Errorf("format version %d, want %d", m.Version, FormatVersion)
	case m.Count <= 0 || m.Count > MaxCount:
		return fmt.Errorf("count %d must be within 1..%d", m.Count, MaxCount)
	case m.Width <= 0 || m.Height <= 0 || m.Width > MaxSide || m.Height > MaxSide:
		return fmt.Errorf("image size %dx%d must be within 1..%d", m.Width, m.Height, MaxSide)
	case m.Classes <= 0:
		return fmt.Errorf("classes %d must be positive", m.Classes)
	case m.Content != "" && m.Content != datasets.ContentNatural:
		return fmt.Errorf("content %q: want natural or none (noise)", m.Content)
	case m.Format != "raw" && m.Format != "png" && m.Format != "jpeg":
		return fmt.Errorf("format %q: want raw, png or jpeg", m.Format)
	case m.Format == "jpeg" && (m.Quality < 1 || m.Quality > 100):
		return fmt.Errorf("jpeg quality %d must be within 1..100", m.Quality)
	case m.Layout != "files" && m.Layout != "shards":
		return fmt.Errorf("layout %q: want files or shards", m.Layout)
	case m.Layout == "shards" && m.ShardSize <= 0:
		return fmt.Errorf("shard size %d must be positive", m.ShardSize)
	case len(m.Labels) != m.Count:
		return fmt.Errorf("%d labels for %d samples", len(m.Labels), m.Count)
	}
	want := m.Count
	if m.Layout == "shards" {
		want = m.Shards()
	}
	if len(m.Files) != want {
		return fmt.Errorf("%d files listed, want %d", len(m.Files), want)
	}
	for i, l := range m.Labels {
		if l < 0 || l >= m.Classes {
			return fmt.Errorf("sample %d: label %d out of range [0, %d)", i, l, m.Classes)
		}
	}
	for _, f := range m.Files {
		if !fs.ValidPath(f.Name) || f.Name == "." || f.Name == ManifestName {
			return fmt.Errorf("file name %q is not a plain relative path", f.Name)
		}
		if f.Size < 0 {
			return fmt.Errorf("%s: size %d is negative", f.Name, f.Size)
		}
		if m.Layout == "files" && f.Size > MaxSampleBytes {
			return fmt.Errorf("%s: size %d is more than a sample may hold (%d)", f.Name, f.Size, int64(MaxSampleBytes))
		}
	}
	return nil
}

// ManifestSum is the SHA-256 of dir's manifest file, in hex: the
// dataset's identity (every file's checksum is in it), for a result
// file's configuration.
func ManifestSum(dir string) (string, error) {
	b, err := ReadBounded(filepath.Join(ResolveDir(dir), ManifestName), MaxManifestBytes)
	if err != nil {
		return "", fmt.Errorf("ondisk: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// ReadManifest reads and validates dir's manifest: a regular file of at
// most MaxManifestBytes. A manifest that does not parse or validate is
// ErrCorrupt.
func ReadManifest(dir string) (*Manifest, error) {
	m, _, err := readManifestSum(dir)
	return m, err
}

// readManifestSum is ReadManifest with ManifestSum, of one read of the
// file.
func readManifestSum(dir string) (*Manifest, string, error) {
	path := filepath.Join(ResolveDir(dir), ManifestName)
	b, err := ReadBounded(path, MaxManifestBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("ondisk: %s: no manifest: not a dataset written by headspace dataset write", dir)
		}
		return nil, "", fmt.Errorf("ondisk: %w", err)
	}
	m, err := parseManifest(b, path)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return m, hex.EncodeToString(sum[:]), nil
}

// parseManifest decodes and validates a manifest's bytes; path names it
// in errors.
func parseManifest(b []byte, path string) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, corruptf("ondisk: %s: %v", path, err)
	}
	if err := m.Validate(); err != nil {
		return nil, corruptf("ondisk: %s: %v", path, err)
	}
	return &m, nil
}

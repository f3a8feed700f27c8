package procloader

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"io"
	"time"
	"unsafe"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/loader"
)

// protocolVersion is bumped whenever the wire format changes, so a stale
// binary fails with a clear message rather than garbage.
const protocolVersion = 2

// maxSpec bounds the start message, so a corrupt length fails fast.
const maxSpec = 1 << 20

// spec is what a worker receives on stdin at start: the dataset and the
// pipeline, as PyTorch pickles the dataset to each worker.
type spec struct {
	Version     int
	Worker      int // this worker's number, 0-based
	Workers     int
	Dataset     datasets.Synthetic
	Transforms  transforms.Config
	Impl        string
	Batch       int
	LoadLatency time.Duration
	// Data and MaxFailures: each worker opens the dataset on disk itself,
	// by path (the parent has prepared its page cache).
	Data        string `json:",omitempty"`
	MaxFailures int    `json:",omitempty"`
	Decoder     string `json:",omitempty"`
	DecodeScale string `json:",omitempty"` // since version 2
	// Data in a bucket: how each worker reads it (its credentials come
	// from the environment it inherits, never through the pipe).
	S3Endpoint       string `json:",omitempty"`
	S3Region         string `json:",omitempty"`
	FetchConcurrency int    `json:",omitempty"`
	ChunkSize        int64  `json:",omitempty"`
	FetchRetries     int    `json:",omitempty"`
	ShardReads       string `json:",omitempty"`
}

func newSpec(cfg loader.Config, worker int) spec {
	return spec{
		Version: protocolVersion, Worker: worker, Workers: cfg.Workers,
		Dataset: cfg.Dataset, Transforms: cfg.Transforms, Impl: cfg.Impl,
		Batch: cfg.Batch, LoadLatency: cfg.LoadLatency,
		Data: cfg.Data, MaxFailures: cfg.MaxFailures, Decoder: cfg.Decoder, DecodeScale: cfg.DecodeScale,
		S3Endpoint: cfg.Bucket.Endpoint, S3Region: cfg.Bucket.Region, FetchConcurrency: cfg.Bucket.Concurrency,
		ChunkSize: cfg.Bucket.ChunkSize, FetchRetries: cfg.Bucket.Retries, ShardReads: cfg.ShardReads,
	}
}

// config is the pipeline configuration the spec describes.
func (s spec) config() loader.Config {
	return loader.Config{
		Dataset: s.Dataset, Transforms: s.Transforms, Impl: s.Impl,
		Batch: s.Batch, Workers: 1, LoadLatency: s.LoadLatency,
		Data: s.Data, MaxFailures: s.MaxFailures, Decoder: s.Decoder, DecodeScale: s.DecodeScale,
		Bucket: bucket.Options{Endpoint: s.S3Endpoint, Region: s.S3Region, Concurrency: s.FetchConcurrency,
			ChunkSize: s.ChunkSize, Retries: s.FetchRetries},
		ShardReads: s.ShardReads,
	}
}

// writeSpec writes s as a 4-byte little-endian length and JSON.
func writeSpec(w io.Writer, s spec) error {
	js, err := json.Marshal(s)
	if err != nil {
		return err
	}
	buf := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(js)), uint32(len(js)))
	_, err = w.Write(append(buf, js...))
	return err
}

func readSpec(r io.Reader) (spec, error) {
	var s spec
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return s, fmt.Errorf("reading start message: %w", err)
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > maxSpec {
		return s, fmt.Errorf("start message of %d bytes is too long", size)
	}
	js := make([]byte, size)
	if _, err := io.ReadFull(r, js); err != nil {
		return s, fmt.Errorf("reading start message: %w", err)
	}
	if err := json.Unmarshal(js, &s); err != nil {
		return s, fmt.Errorf("decoding start message: %w", err)
	}
	if s.Version != protocolVersion {
		return s, fmt.Errorf("start message has protocol version %d, want %d (parent and worker binaries differ)", s.Version, protocolVersion)
	}
	return s, nil
}

// A request is one batch index, 8 bytes little-endian, on the worker's stdin.
func writeRequest(w io.Writer, k int) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(k))
	_, err := w.Write(b[:])
	return err
}

func readRequest(r io.Reader) (int, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	k := int64(binary.LittleEndian.Uint64(b[:]))
	if k < 0 {
		return 0, fmt.Errorf("request for batch %d", k)
	}
	return int(k), nil
}

// A batch on the worker's stdout is a 32-byte header
//
//	magic uint32 | reserved uint32 | index int64 | size uint32 | sampleLen uint32 | payload uint64
//
// (little-endian), then size×sampleLen float32 values and size int32 labels
// in host byte order: parent and worker are the same binary on the same
// machine, so the payload is copied as raw memory, as PyTorch moves tensors.
const (
	headerLen = 32
	magic     = 0x31425348 // "HSB1"
)

type header struct {
	index, size, sampleLen int
	payload                uint64
}

func payloadLen(size, sampleLen int) uint64 { return uint64(size)*uint64(sampleLen)*4 + uint64(size)*4 }

func writeBatch(w io.Writer, b *batching.Batch) error {
	var h [headerLen]byte
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint64(h[8:], uint64(b.Index))
	binary.LittleEndian.PutUint32(h[16:], uint32(b.Size))
	binary.LittleEndian.PutUint32(h[20:], uint32(b.SampleLen))
	binary.LittleEndian.PutUint64(h[24:], payloadLen(b.Size, b.SampleLen))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	if _, err := w.Write(float32Bytes(b.Data)); err != nil {
		return err
	}
	_, err := w.Write(int32Bytes(b.Labels))
	return err
}

// errBadHeader marks a frame that is not what the parent asked for.
var errBadHeader = errors.New("bad header")

func readHeader(r io.Reader) (header, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return header{}, err
	}
	if m := binary.LittleEndian.Uint32(h[0:]); m != magic {
		return header{}, fmt.Errorf("%w: magic %#x, want %#x", errBadHeader, m, magic)
	}
	return header{
		index:     int(int64(binary.LittleEndian.Uint64(h[8:]))),
		size:      int(binary.LittleEndian.Uint32(h[16:])),
		sampleLen: int(binary.LittleEndian.Uint32(h[20:])),
		payload:   binary.LittleEndian.Uint64(h[24:]),
	}, nil
}

// readPayload reads a batch's values and labels into b.
func readPayload(r io.Reader, b *batching.Batch) error {
	if _, err := io.ReadFull(r, float32Bytes(b.Data)); err != nil {
		return err
	}
	_, err := io.ReadFull(r, int32Bytes(b.Labels))
	return err
}

func float32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*4)
}

func int32Bytes(s []int32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*4)
}

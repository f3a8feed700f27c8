package bucket

import (
	"flag"
	"fmt"

	"github.com/headspace-bench/headspace/internal/cli"
)

// The bounds of Options' Concurrency and ChunkSize: the one place of
// --fetch-concurrency's and --chunk-size's ranges (Validate, and the
// command line's bounds table).
const (
	// MaxConcurrency is the most requests in flight Options may ask for.
	MaxConcurrency = 1024
	// MinChunkSize is the smallest single ranged GET.
	MinChunkSize = 4096
	// MaxChunkSize is the largest single ranged GET: each request in
	// flight holds a buffer of its size, so MaxConcurrency of them stay
	// within 256 GiB, and a GET this large is already one request per
	// object.
	MaxChunkSize = 256 << 20
)

// The flags' bounds in the command line's table (internal/cli), beside
// the flags.
var _ = cli.Declare(map[string]cli.Bound{
	"fetch-concurrency": {Lo: 1, Hi: MaxConcurrency},
	"chunk-size":        {Lo: MinChunkSize, Hi: MaxChunkSize},
})

// ConcurrencyFlag registers --fetch-concurrency onto fs, into p, with its
// default DefaultConcurrency: the one definition of the flag, for the
// commands that take no other of RegisterFlags'.
func ConcurrencyFlag(fs *flag.FlagSet, p *int) {
	fs.IntVar(p, "fetch-concurrency", DefaultConcurrency, fmt.Sprintf("with data in a bucket (--data s3://…, or ours in peer --remote): GET requests in `flight`, whatever --workers is (1 to %d)", MaxConcurrency))
}

// RegisterFlags registers the flags of o a command line sets onto fs:
// --s3-endpoint (Endpoint), --fetch-concurrency (Concurrency) and
// --chunk-size (ChunkSize), each with its default. Validate checks what
// they were given.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Endpoint, "s3-endpoint", "", "with --data s3://BUCKET/PREFIX: the S3-compatible server's `url` (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS); credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the shared credentials file")
	ConcurrencyFlag(fs, &o.Concurrency)
	fs.Int64Var(&o.ChunkSize, "chunk-size", DefaultChunkSize, fmt.Sprintf("with --data s3://…: the largest single ranged GET in `bytes` (%d to %d)", MinChunkSize, MaxChunkSize))
}

// Validate checks Concurrency and ChunkSize against their bounds; zero
// takes the default. Errors name the flags that set them.
func (o Options) Validate() error {
	if o.Concurrency < 0 || o.Concurrency > MaxConcurrency {
		return fmt.Errorf("--fetch-concurrency %d: want 1 to %d", o.Concurrency, MaxConcurrency)
	}
	if o.ChunkSize != 0 && (o.ChunkSize < MinChunkSize || o.ChunkSize > MaxChunkSize) {
		return fmt.Errorf("--chunk-size %d: want %d to %d", o.ChunkSize, MinChunkSize, MaxChunkSize)
	}
	return nil
}

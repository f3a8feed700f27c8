package cacheloader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/headspace-bench/headspace/batching"
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("cache: loader closed")

// Loader is a batching.Loader that wraps another one the way Iterator wraps a
// sequence: it passes src's batches through while keeping the first
// NumCaches, stops pulling from src after ReturnCachesAfter batches (or when
// src ends early), then hands out the kept batches again, in order and
// cycling, and returns io.EOF once StopAfter batches have been handed out in
// all (never, when StopAfter is 0). It is the counterpart of SPDL's
// CacheDataLoader for the harness's pull-style loaders.
//
// Batch ownership:
//   - a cached batch stays owned by the Loader until Close, which releases it
//     back to src; the consumer's Release of a cached batch is a no-op, so the
//     consumer may release every batch it receives, as with any loader;
//   - a passed-through batch that is not cached belongs to the consumer, and
//     its Release goes to src.Release.
//
// A replayed batch is the same *batching.Batch, with the same contents and
// Index, each time it comes round; the consumer must not modify it.
//
// src is not closed at the switch: it stays open, idle, until Close, because
// the cached batches are its buffers. After the switch src.Next is never
// called again.
//
// Next must not be called concurrently with itself, as for any loader;
// Release and Close may be called from any goroutine.
type Loader struct {
	src batching.Loader
	cfg Config // normalized

	mu       sync.Mutex
	caches   []*batching.Batch
	cached   map[*batching.Batch]struct{} // the batches in caches, for Release
	passed   int                          // batches handed out from src
	replayed int                          // batches handed out from the caches
	switched bool                         // no more src.Next
	closed   bool
	closeErr error
}

// NewLoader wraps src. cfg is checked as for Iterator.
func NewLoader(src batching.Loader, cfg Config) (*Loader, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: nil source loader", ErrConfig)
	}
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	n := min(c.NumCaches, initialCap)
	return &Loader{
		src:    src,
		cfg:    c,
		caches: make([]*batching.Batch, 0, n),
		cached: make(map[*batching.Batch]struct{}, n),
	}, nil
}

// Next returns the next batch: one of src's during the first phase, a cached
// one after the switch, or io.EOF once StopAfter batches have been handed
// out or when src yielded no batch at all. Errors from src are returned as
// they are; ctx is honoured in both phases.
func (l *Loader) Next(ctx context.Context) (*batching.Batch, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if l.cfg.StopAfter > 0 && l.passed+l.replayed >= l.cfg.StopAfter {
		l.mu.Unlock()
		return nil, io.EOF
	}
	if !l.switched {
		l.mu.Unlock()
		b, err := l.src.Next(ctx)
		l.mu.Lock()
		switch {
		case l.closed:
			// Close ran while src.Next was blocked: the batch, if any, is
			// not handed out.
			l.mu.Unlock()
			if err == nil && b != nil {
				l.src.Release(b)
			}
			return nil, ErrClosed
		case errors.Is(err, io.EOF):
			// src ended before ReturnCachesAfter: replay what was cached.
			l.switched = true
		case err != nil:
			l.mu.Unlock()
			return nil, err
		default:
			if len(l.caches) < l.cfg.NumCaches {
				l.caches = append(l.caches, b)
				l.cached[b] = struct{}{}
			}
			l.passed++
			if l.passed >= l.cfg.ReturnCachesAfter {
				l.switched = true
			}
			l.mu.Unlock()
			return b, nil
		}
	}
	defer l.mu.Unlock()
	if len(l.caches) == 0 {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := l.caches[l.replayed%len(l.caches)]
	l.replayed++
	return b, nil
}

// Release hands b back: to src when b was passed through and not cached;
// cached batches are kept until Close, so their Release is a no-op.
func (l *Loader) Release(b *batching.Batch) {
	l.mu.Lock()
	_, cached := l.cached[b]
	l.mu.Unlock()
	if !cached {
		l.src.Release(b)
	}
}

// Close releases the cached batches back to src, in the order they were
// cached, then closes src and returns its error. The consumer must be done
// with every batch it received before calling Close. Close is safe to call
// more than once; later calls return the first one's result.
func (l *Loader) Close() error {
	l.mu.Lock()
	if l.closed {
		err := l.closeErr
		l.mu.Unlock()
		return err
	}
	l.closed = true
	caches := l.caches
	l.mu.Unlock()
	// l.cached is kept so that a late Release of a cached batch stays a
	// no-op instead of releasing it a second time.
	for _, b := range caches {
		l.src.Release(b)
	}
	err := l.src.Close()
	l.mu.Lock()
	l.closeErr = err
	l.mu.Unlock()
	return err
}

package cacheloader

import (
	"errors"
	"fmt"
	"iter"
)

// ErrConfig is wrapped by every configuration error that Iterator and
// NewLoader return.
var ErrConfig = errors.New("cache: invalid configuration")

// Config says how many items to cache, when to switch to the caches and when
// to stop. The zero values of ReturnCachesAfter and StopAfter select the
// defaults; NumCaches has no default.
type Config struct {
	NumCaches         int // items cached from the start of src; at least 1
	ReturnCachesAfter int // items passed through from src before the caches are replayed; 0 means NumCaches
	StopAfter         int // items yielded in all, both phases counted; 0 means no limit
}

// normalize checks c and returns it with the defaults filled in: on success
// ReturnCachesAfter >= NumCaches >= 1, and StopAfter is 0 or at least
// ReturnCachesAfter.
func (c Config) normalize() (Config, error) {
	switch {
	case c.NumCaches < 1:
		return c, fmt.Errorf("%w: NumCaches %d must be at least 1", ErrConfig, c.NumCaches)
	case c.ReturnCachesAfter < 0:
		return c, fmt.Errorf("%w: ReturnCachesAfter %d is negative", ErrConfig, c.ReturnCachesAfter)
	case c.StopAfter < 0:
		return c, fmt.Errorf("%w: StopAfter %d is negative", ErrConfig, c.StopAfter)
	}
	if c.ReturnCachesAfter == 0 {
		c.ReturnCachesAfter = c.NumCaches
	} else if c.ReturnCachesAfter < c.NumCaches {
		return c, fmt.Errorf("%w: ReturnCachesAfter %d is less than NumCaches %d: some caches would never be filled",
			ErrConfig, c.ReturnCachesAfter, c.NumCaches)
	}
	if c.StopAfter != 0 && c.StopAfter < c.ReturnCachesAfter {
		return c, fmt.Errorf("%w: StopAfter %d is less than ReturnCachesAfter %d: the caches would never be replayed",
			ErrConfig, c.StopAfter, c.ReturnCachesAfter)
	}
	return c, nil
}

// initialCap bounds the capacity reserved up front for the caches, so that a
// huge NumCaches with a short source does not allocate memory it never uses.
const initialCap = 64

// Iterator wraps src so that it yields src's first cfg.ReturnCachesAfter
// items, keeping the first cfg.NumCaches of them, then stops reading src and
// yields the kept items again, in order and cycling, until cfg.StopAfter
// items have been yielded in all (forever when StopAfter is 0). It is the Go
// counterpart of SPDL's spdl.pipeline.cache_iterator.
//
// The range loop over src ends, so that src's deferred clean-up runs, as soon
// as the ReturnCachesAfter-th item has been yielded and before the first
// cached item is, or right after that item when it is also the last one
// (StopAfter == ReturnCachesAfter). src is never asked for more than
// ReturnCachesAfter items. A src with fewer items simply ends the first phase
// early and the replay cycles over what was cached; an empty src ends the
// sequence at once (SPDL's generator would spin forever).
//
// The consumer may stop at any time, in either phase; a stop during the first
// phase ends the range over src as well.
//
// The returned sequence may be ranged more than once, and concurrently if src
// may. Each range starts afresh: it ranges src again and keeps its own
// caches, as SPDL's CacheDataLoader does on every epoch. A src that is itself
// single-use (say a sequence over a channel) gives a later range whatever it
// still yields.
//
// The items are cached by value: for pointer or slice types the replay hands
// back the very same objects, so the consumer must not recycle them.
//
// Iterator returns an error wrapping ErrConfig when cfg is invalid: NumCaches
// below 1, a negative field, ReturnCachesAfter below NumCaches, or StopAfter
// below ReturnCachesAfter (after defaults are applied). It also rejects a nil
// src.
func Iterator[T any](src iter.Seq[T], cfg Config) (iter.Seq[T], error) {
	if src == nil {
		return nil, fmt.Errorf("%w: nil source", ErrConfig)
	}
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return func(yield func(T) bool) {
		caches := make([]T, 0, min(c.NumCaches, initialCap))
		n := 0 // items yielded so far
		for v := range src {
			if len(caches) < c.NumCaches {
				caches = append(caches, v)
			}
			n++
			if !yield(v) || n == c.StopAfter {
				return
			}
			if n >= c.ReturnCachesAfter {
				break
			}
		}
		// The range over src has ended here: its clean-up has run.
		if len(caches) == 0 {
			return
		}
		replay(caches, c.StopAfter-n, c.StopAfter == 0, yield)
	}, nil
}

// replay yields caches in order, cycling, left items in all, or forever when
// forever is set, until yield returns false. It is the hot loop of the
// replay phase and allocates nothing.
func replay[T any](caches []T, left int, forever bool, yield func(T) bool) {
	if forever {
		for {
			for _, v := range caches {
				if !yield(v) {
					return
				}
			}
		}
	}
	for left > 0 {
		round := caches[:min(left, len(caches))]
		for _, v := range round {
			if !yield(v) {
				return
			}
		}
		left -= len(round)
	}
}

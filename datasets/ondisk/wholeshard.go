package ondisk

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// The values of Options.ShardReads: how a member of a shard in a bucket
// is fetched.
const (
	// ShardReadsRanged ("" too) fetches each member with its own ranged
	// GET: one request per sample, whatever the shard's size.
	ShardReadsRanged = "ranged"
	// ShardReadsWhole fetches a shard whole, once, the first time one of
	// its members is asked for, and serves its members from memory: one
	// request per shard (per ChunkSize of it), the remedy shards exist
	// for (WebDataset's and MosaicML Streaming's streaming reads). A
	// shard is kept until each of its members was served once (an
	// epoch's reads of it), so a few shards are in memory at a time.
	ShardReadsWhole = "whole"
)

// ShardReadModes lists the values of Options.ShardReads.
var ShardReadModes = []string{ShardReadsRanged, ShardReadsWhole}

// wholeShard is a shard being served from memory.
type wholeShard struct {
	once sync.Once
	data []byte
	err  error
	left atomic.Int64 // members still to serve before it is dropped
}

// wholeShards are a remote dataset's shards in memory, by name, and each
// shard's member count.
type wholeShards struct {
	mu      sync.Mutex
	live    map[string]*wholeShard
	members map[string]int64
}

// newWholeShards counts the members of each shard: sample i lies in
// shardOf(i), or in no shard when it returns "".
func newWholeShards(n int, shardOf func(i int) string) *wholeShards {
	w := &wholeShards{live: map[string]*wholeShard{}, members: map[string]int64{}}
	for i := range n {
		if s := shardOf(i); s != "" {
			w.members[s]++
		}
	}
	return w
}

// member copies [off, off+size) of the shard rel into buf, fetching the
// shard whole if it is not in memory. A failed fetch is not kept: the
// next member asked for fetches the shard again.
func (d *Dataset) member(ctx context.Context, i int, rel string, off, size int64, buf []byte) ([]byte, error) {
	w := d.whole
	w.mu.Lock()
	e := w.live[rel]
	if e == nil {
		e = new(wholeShard)
		e.left.Store(w.members[rel])
		w.live[rel] = e
	}
	w.mu.Unlock()
	e.once.Do(func() { e.data, e.err = d.remote.GetListed(ctx, d.listed(rel), nil) })
	drop := func() {
		w.mu.Lock()
		if w.live[rel] == e {
			delete(w.live, rel)
		}
		w.mu.Unlock()
	}
	if e.err != nil {
		drop()
		return buf[:0], remoteFault(fmt.Errorf("ondisk: fetch sample %d: %w", i, e.err))
	}
	if off < 0 || off+size > int64(len(e.data)) {
		drop()
		return buf[:0], corruptf("ondisk: fetch sample %d: %s: bytes [%d, %d) beyond the shard's %d", i, d.where(i), off, off+size, len(e.data))
	}
	buf = append(buf[:0], e.data[off:off+size]...)
	if e.left.Add(-1) <= 0 {
		drop()
	}
	return buf, nil
}

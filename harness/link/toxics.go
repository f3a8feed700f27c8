package link

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"golang.org/x/time/rate"
)

// The link's own toxics, registered in toxiproxy's registry and set up by
// Start after toxiproxy has made them (its registry builds toxics from
// JSON, which cannot carry a shared limiter). They replace toxiproxy's
// latency and bandwidth toxics because those count whole milliseconds and
// kilobytes (1 ms ± 0.2 ms cannot be said), know no shared cap, and keep
// sleeping while the link closes.
const (
	delayToxicName = "headspace-link-delay"
	rateToxicName  = "headspace-link-rate"
)

func init() {
	toxics.Register(delayToxicName, new(delayToxic))
	toxics.Register(rateToxicName, new(rateToxic))
}

// delayToxic holds each chunk until it has been in the link for its
// one-way delay: half the round trip plus a uniform draw within ± half the
// jitter. Chunks keep their order, as TCP's do.
type delayToxic struct {
	oneWay, jitter time.Duration // half of Config's
	rng            *lockedRand
	closing        <-chan struct{}
}

// GetBufferSize is how many chunks can be in flight on one connection, as
// toxiproxy's latency toxic allows (32 KiB chunks: up to 32 MiB).
func (t *delayToxic) GetBufferSize() int { return 1024 }

func (t *delayToxic) Pipe(stub *toxics.ToxicStub) {
	pipe(stub, func(c *stream.StreamChunk) {
		d := t.oneWay
		if t.jitter > 0 {
			d += time.Duration(t.rng.int64n(2*int64(t.jitter)+1)) - t.jitter
		}
		wait(time.Until(c.Timestamp.Add(d)), t.closing)
	})
}

// pipe passes each chunk of stub on after hold has held it, until the
// input ends (then it closes the stub) or toxiproxy interrupts it: the
// loop of every toxic here.
func pipe(stub *toxics.ToxicStub, hold func(*stream.StreamChunk)) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			hold(c)
			stub.Output <- c
		}
	}
}

// rateToxic passes a chunk once the link's shared limiter and the
// connection's own limiter (each nil when unlimited) have its bytes, and
// counts the bytes.
type rateToxic struct {
	shared  *rate.Limiter
	perConn int64 // bytes per second; 0 unlimited
	bytes   *atomic.Int64
	closing <-chan struct{}
}

// NewState is the connection's own limiter (toxiproxy keeps one per
// connection and direction).
func (t *rateToxic) NewState() any {
	if t.perConn == 0 {
		return (*rate.Limiter)(nil)
	}
	return newLimiter(float64(t.perConn))
}

func (t *rateToxic) Pipe(stub *toxics.ToxicStub) {
	own, _ := stub.State.(*rate.Limiter)
	pipe(stub, func(c *stream.StreamChunk) {
		take(t.shared, len(c.Data), t.closing)
		take(own, len(c.Data), t.closing)
		t.bytes.Add(int64(len(c.Data)))
	})
}

// newLimiter is a limiter of bytesPerSecond whose burst is 10 ms of it,
// at least 32 KiB (a chunk) and at most 64 MiB.
func newLimiter(bytesPerSecond float64) *rate.Limiter {
	burst := min(max(int(bytesPerSecond/100), 32<<10), 64<<20)
	return rate.NewLimiter(rate.Limit(bytesPerSecond), burst)
}

// take waits until lim (nil: unlimited) has n tokens, in pieces of its
// burst, or until closing: a closing link lets its last bytes through at
// once so that Close is prompt.
func take(lim *rate.Limiter, n int, closing <-chan struct{}) {
	for lim != nil && n > 0 {
		piece := min(n, lim.Burst())
		if !wait(lim.ReserveN(time.Now(), piece).Delay(), closing) {
			return
		}
		n -= piece
	}
}

// wait sleeps for d, or until closing; it reports whether it slept the
// whole time.
func wait(d time.Duration, closing <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-closing:
		return false
	}
}

// lockedRand is a seeded generator shared by the goroutines of a link.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newLockedRand(seed, stream uint64) *lockedRand {
	return &lockedRand{r: rand.New(rand.NewPCG(seed, stream))}
}

func (l *lockedRand) int64n(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

func (l *lockedRand) float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

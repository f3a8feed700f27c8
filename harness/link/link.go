package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// Link is a running emulated link: an address on 127.0.0.1 that forwards
// to the upstream through the emulated network and the HTTP stage.
type Link struct {
	cfg      Config
	ln       net.Listener
	stage    *stage
	api      *toxiproxy.ApiServer
	proxy    *toxiproxy.Proxy
	closing  chan struct{}
	stats    counters
	accepted sync.WaitGroup // the accept loop
	stopCtx  func() bool    // stops the context's AfterFunc
	once     sync.Once

	mu      sync.Mutex
	closed  bool
	pairs   map[*pair]struct{}
	drained chan struct{} // closed when closed and no pair is left
	nextID  int64
}

// Stats are what a link has done so far.
type Stats struct {
	// Requests reached the HTTP stage; SlowDowns of them were answered
	// 503 SlowDown; Resets, Stalls and Truncations were faulted.
	Requests, SlowDowns, Resets, Stalls, Truncations int64
	// UpstreamErrors are requests the upstream did not answer (sent on
	// as 502 Bad Gateway).
	UpstreamErrors int64
	// BytesUp and BytesDown crossed the emulated network, client to
	// server and back: HTTP headers and bodies as on the wire.
	BytesUp, BytesDown int64
	// Conns is how many connections the client opened.
	Conns int64
}

// Faults is how many faults the link injected, 503s not included.
func (s Stats) Faults() int64 { return s.Resets + s.Stalls + s.Truncations }

// Start runs a link from a new address on 127.0.0.1 to upstream, a
// host:port on the loopback interface (an IP address: a name could
// resolve elsewhere). The link stops when ctx is done or Close is called;
// Close must be called either way.
func Start(ctx context.Context, upstream string, cfg Config) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := loopback(upstream); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	l := &Link{
		cfg: cfg, closing: make(chan struct{}),
		pairs: map[*pair]struct{}{}, drained: make(chan struct{}),
	}
	st, err := newStage(cfg, upstream, &l.stats, l.closing)
	if err != nil {
		return nil, err
	}
	l.stage = st
	l.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		close(l.closing)
		st.close()
		return nil, fmt.Errorf("link: listen: %w", err)
	}
	// The proxy is never started: it holds the toxic chains, and Link's
	// own accept loop starts each connection's links (see the package
	// comment). Its logger, and so every link's, is a no-op.
	l.api = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	l.proxy = toxiproxy.NewProxy(l.api, "headspace-link", l.ln.Addr().String(), st.ln.Addr().String())
	if err := l.addToxics(cfg); err != nil {
		l.Close()
		return nil, err
	}
	l.accepted.Add(1)
	go l.accept()
	l.stopCtx = context.AfterFunc(ctx, func() { l.Close() })
	return l, nil
}

// addToxics gives each direction its delay (half the round trip, with
// half the jitter) and its rate (the link's shared cap and the
// per-connection one).
func (l *Link) addToxics(cfg Config) error {
	var shared [2]*rate.Limiter
	for dir := range shared {
		if cfg.Bandwidth > 0 {
			shared[dir] = newLimiter(float64(cfg.Bandwidth))
		}
	}
	counts := [2]*atomic.Int64{&l.stats.bytesUp, &l.stats.bytesDown}
	for dir, name := range []string{"upstream", "downstream"} {
		d, err := l.addToxic(delayToxicName, name)
		if err == nil {
			*d.(*delayToxic) = delayToxic{
				oneWay: cfg.Latency / 2, jitter: cfg.Jitter / 2,
				rng: newLockedRand(cfg.Seed, uint64(dir)), closing: l.closing,
			}
			var r toxics.Toxic
			r, err = l.addToxic(rateToxicName, name)
			if err == nil {
				*r.(*rateToxic) = rateToxic{
					shared: shared[dir], perConn: cfg.ConnBandwidth,
					bytes: counts[dir], closing: l.closing,
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// addToxic adds toxiproxy's toxic typ to the chain of direction dir and
// returns it to be set up.
func (l *Link) addToxic(typ, dir string) (toxics.Toxic, error) {
	w, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(
		fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1}`, typ+"-"+dir, typ, dir)))
	if err != nil {
		return nil, fmt.Errorf("link: toxiproxy: adding %s: %w", typ, err)
	}
	return w.Toxic, nil
}

// loopback refuses an upstream off the loopback interface.
func loopback(upstream string) error {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return fmt.Errorf("link: upstream %q is not host:port", upstream)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("link: upstream %q is not a loopback IP address (like 127.0.0.1:9000): the link sends nothing off this machine", upstream)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("link: upstream %q: port %q is not from 1 to 65535", upstream, port)
	}
	return nil
}

// Addr is the link's host:port on 127.0.0.1.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// URL is the link's address as an http URL, the endpoint to give a client.
func (l *Link) URL() string { return "http://" + l.Addr() }

// Config is the link's configuration.
func (l *Link) Config() Config { return l.cfg }

// Stats is what the link has done so far.
func (l *Link) Stats() Stats {
	s := &l.stats
	return Stats{
		Requests: s.requests.Load(), SlowDowns: s.slowDowns.Load(),
		Resets: s.resets.Load(), Stalls: s.stalls.Load(), Truncations: s.truncations.Load(),
		UpstreamErrors: s.upstreamErrors.Load(),
		BytesUp:        s.bytesUp.Load(), BytesDown: s.bytesDown.Load(), Conns: s.conns.Load(),
	}
}

// Close stops the link: it stops accepting, closes every connection
// (bytes still in the emulated network are dropped at once, not paced
// out), and returns when every goroutine it started has finished its work.
// It is safe to call more than once.
func (l *Link) Close() error {
	l.once.Do(func() {
		if l.stopCtx != nil {
			l.stopCtx()
		}
		close(l.closing)
		if l.ln != nil {
			_ = l.ln.Close()
		}
		l.accepted.Wait()
		l.mu.Lock()
		l.closed = true
		for p := range l.pairs {
			_ = p.client.Close()
			_ = p.server.Close()
		}
		if len(l.pairs) == 0 {
			close(l.drained)
		}
		l.mu.Unlock()
		<-l.drained
		l.stage.close()
	})
	return nil
}

// accept starts each client connection's two toxic links: client to the
// HTTP stage and back.
func (l *Link) accept() {
	defer l.accepted.Done()
	stageAddr := l.stage.ln.Addr().String()
	for {
		client, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.closing:
				return
			default: // out of descriptors, say: wait, as net/http does
				if !wait(5*time.Millisecond, l.closing) {
					return
				}
				continue
			}
		}
		server, err := net.Dial("tcp", stageAddr)
		if err != nil {
			_ = client.Close()
			continue
		}
		l.stats.conns.Add(1)
		p := &pair{l: l, client: client, server: server}
		p.left.Store(4)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		l.pairs[p] = struct{}{}
		name := strconv.FormatInt(l.nextID, 10)
		l.nextID++
		l.mu.Unlock()
		l.proxy.Toxics.StartLink(l.api, name+"upstream", &source{Conn: client, p: p}, &dest{Conn: server, p: p}, stream.Upstream)
		l.proxy.Toxics.StartLink(l.api, name+"downstream", &source{Conn: server, p: p}, &dest{Conn: client, p: p}, stream.Downstream)
	}
}

// A pair is a client connection and the link's connection to the HTTP
// stage. Its four ends (two reads, two writes) report when toxiproxy's
// goroutines are done with them, so Close can wait for them.
//
// The ends also mend two things toxiproxy leaves: a destination that
// fails a write would stop toxiproxy's copy and leave the toxic chain
// blocked for ever (its goroutines leak), so a dest swallows the error,
// discards what follows and closes both connections; and toxiproxy
// closes a destination gently even when its source was reset, so a pair
// whose source was reset closes with an RST (linger 0) to carry the reset
// on.
type pair struct {
	l              *Link
	client, server net.Conn
	left           atomic.Int32 // ends not yet done
	broken         atomic.Bool  // a write failed: discard the rest
	aborted        atomic.Bool  // a reset came in: close with a reset
}

func (p *pair) done() {
	if p.left.Add(-1) > 0 {
		return
	}
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pairs, p)
	if l.closed && len(l.pairs) == 0 {
		close(l.drained)
	}
}

// abort closes both connections; with reset, abortively.
func (p *pair) abort(reset bool) {
	if reset {
		p.aborted.Store(true)
		for _, c := range []net.Conn{p.client, p.server} {
			if tcp, ok := c.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0)
			}
		}
	}
	_ = p.client.Close()
	_ = p.server.Close()
}

// source is the end toxiproxy reads.
type source struct {
	net.Conn
	p    *pair
	once sync.Once
}

func (s *source) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b)
	if err != nil {
		if err != io.EOF && !errors.Is(err, net.ErrClosed) && !s.p.broken.Load() {
			s.p.aborted.Store(true) // reset by the peer: pass it on
		}
		s.once.Do(s.p.done)
	}
	return n, err
}

// dest is the end toxiproxy writes.
type dest struct {
	net.Conn
	p    *pair
	once sync.Once
}

func (d *dest) Write(b []byte) (int, error) {
	if d.p.broken.Load() {
		return len(b), nil
	}
	if _, err := d.Conn.Write(b); err != nil {
		d.p.broken.Store(true)
		d.p.abort(!errors.Is(err, net.ErrClosed))
	}
	return len(b), nil
}

func (d *dest) Close() error {
	if tcp, ok := d.Conn.(*net.TCPConn); ok && d.p.aborted.Load() {
		_ = tcp.SetLinger(0)
	}
	err := d.Conn.Close()
	d.once.Do(d.p.done)
	return err
}

package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// stage is the link's HTTP stage: between the emulated network and the
// object server, it answers 503 SlowDown above the request rate, injects
// the per-request faults and forwards everything else, untouched (the
// Host header too, which S3 signatures cover), to the upstream.
type stage struct {
	cfg      Config
	proxy    *httputil.ReverseProxy
	tr       *http.Transport
	srv      *http.Server
	ln       net.Listener
	requests *rate.Limiter // nil: unlimited
	rng      *lockedRand
	closing  <-chan struct{}
	stats    *counters
	served   sync.WaitGroup // the Serve goroutine

	mu     sync.Mutex
	closed bool
	active int           // handlers running
	idle   chan struct{} // closed when closed and no handler runs
	seen   [3]int64      // requests each fault has decided on
}

// counters are a link's statistics, updated as it runs.
type counters struct {
	requests, slowDowns, resets, stalls, truncations, upstreamErrors atomic.Int64
	bytesUp, bytesDown, conns                                        atomic.Int64
}

type truncateKey struct{}

// errTruncated ends a truncated body; the reverse proxy then aborts the
// response and the server closes the connection.
var errTruncated = errors.New("link: truncated by fault injection")

// newStage listens on 127.0.0.1 for the emulated network's connections
// and forwards to upstream, a loopback host:port.
func newStage(cfg Config, upstream string, stats *counters, closing <-chan struct{}) (*stage, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("link: HTTP stage: %w", err)
	}
	s := &stage{
		cfg: cfg, ln: ln, stats: stats, closing: closing,
		rng:  newLockedRand(cfg.Seed, 2),
		idle: make(chan struct{}),
	}
	if cfg.RequestRate > 0 {
		s.requests = rate.NewLimiter(rate.Limit(cfg.RequestRate), max(1, int(cfg.RequestRate/10)))
	}
	var dialer net.Dialer
	s.tr = &http.Transport{
		// Only ever the upstream, whatever a request names, and never
		// through an environment's proxy.
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", upstream)
		},
		// Bodies pass as they are: no gzip negotiated on the client's
		// behalf (which would also drop Content-Length).
		DisableCompression:  true,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     30 * time.Second,
	}
	target := &url.URL{Scheme: "http", Host: upstream}
	quiet := log.New(io.Discard, "", 0)
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport:     s.tr,
		FlushInterval: -1, // bytes go on as they come: no buffering hides the link's pace
		ErrorLog:      quiet,
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Context().Value(truncateKey{}) != nil {
				keep := max(resp.ContentLength/2, 0)
				resp.Body = &truncated{ReadCloser: resp.Body, left: keep}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.stats.upstreamErrors.Add(1)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	s.srv = &http.Server{Handler: s, ErrorLog: quiet, ReadHeaderTimeout: time.Minute}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		_ = s.srv.Serve(ln) // returns ErrServerClosed on close
	}()
	return s, nil
}

// ServeHTTP throttles, injects faults and forwards one request.
func (s *stage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		panic(http.ErrAbortHandler) // closing: drop the connection
	}
	defer s.leave()
	s.stats.requests.Add(1)
	if s.requests != nil && !s.requests.Allow() {
		s.stats.slowDowns.Add(1)
		slowDown(w, r)
		return
	}
	if s.hits(0, s.cfg.Reset) {
		s.stats.resets.Add(1)
		reset(w)
		return
	}
	if s.hits(1, s.cfg.Stall) {
		s.stats.stalls.Add(1)
		select {
		case <-time.After(s.cfg.StallFor):
		case <-r.Context().Done():
			return
		case <-s.closing:
			panic(http.ErrAbortHandler)
		}
	}
	if s.hits(2, s.cfg.Truncate) {
		s.stats.truncations.Add(1)
		r = r.WithContext(context.WithValue(r.Context(), truncateKey{}, true))
		w = headerFlusher{w} // the headers reach the client even if no body byte does
	}
	s.proxy.ServeHTTP(w, r)
}

// hits decides whether fault i, f, hits this request.
func (s *stage) hits(i int, f Fault) bool {
	switch {
	case f.Every > 0:
		s.mu.Lock()
		s.seen[i]++
		n := s.seen[i]
		s.mu.Unlock()
		return n%f.Every == 0
	case f.Probability > 0:
		return s.rng.float64() < f.Probability
	}
	return false
}

// slowDown answers as S3 does when asked too fast.
func slowDown(w http.ResponseWriter, r *http.Request) {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><Resource>%s</Resource><RequestId>headspace-link</RequestId></Error>
`, xmlEscape(r.URL.Path))
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, body)
}

func xmlEscape(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		switch c {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// reset drops the connection abortively (an RST, not a FIN) before any
// response byte; the link carries the RST on to the client.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// truncated is a response body cut after left bytes.
type truncated struct {
	io.ReadCloser
	left int64
}

func (t *truncated) Read(p []byte) (int, error) {
	if t.left <= 0 {
		return 0, errTruncated
	}
	if int64(len(p)) > t.left {
		p = p[:t.left]
	}
	n, err := t.ReadCloser.Read(p)
	t.left -= int64(n)
	if err == io.EOF {
		err = errTruncated // a body shorter than its length: still cut
	}
	return n, err
}

// headerFlusher sends the response headers as soon as they are written.
type headerFlusher struct{ http.ResponseWriter }

func (h headerFlusher) WriteHeader(code int) {
	h.ResponseWriter.WriteHeader(code)
	_ = http.NewResponseController(h.ResponseWriter).Flush()
}

func (h headerFlusher) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (s *stage) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active++
	return true
}

func (s *stage) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.closed && s.active == 0 {
		close(s.idle)
	}
}

// close stops the stage and returns once no handler runs and every
// connection it made is closed.
func (s *stage) close() {
	_ = s.srv.Close() // the listener and every connection: handlers' contexts end
	s.served.Wait()
	s.mu.Lock()
	s.closed = true
	if s.active == 0 {
		close(s.idle)
	}
	s.mu.Unlock()
	<-s.idle
	s.tr.CloseIdleConnections()
}

package link

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// upstream is an object server stand-in on 127.0.0.1, closed when the
// test ends.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler())
	t.Cleanup(srv.Close)
	return srv
}

// handler answers /size/N with N bytes, /echo with the length of the
// request body, anything else with "ok" and the Host header.
func handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/size/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/size/"))
			w.Header().Set("Content-Length", strconv.Itoa(n))
			chunk := bytes.Repeat([]byte("x"), 32<<10)
			for n > 0 {
				k, err := w.Write(chunk[:min(n, len(chunk))])
				if err != nil {
					return
				}
				n -= k
			}
		case r.URL.Path == "/echo":
			n, _ := io.Copy(io.Discard, r.Body)
			fmt.Fprint(w, n)
		default:
			fmt.Fprint(w, "ok host=", r.Host)
		}
	})
}

// start runs a link to a fresh upstream, closed when the test ends.
func start(t *testing.T, cfg Config) *Link {
	t.Helper()
	up := upstream(t)
	l, err := Start(context.Background(), up.Listener.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// client is a plain HTTP client with its own connections.
func client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestPassThrough: the zero link forwards requests and bodies, the Host
// header as the client sent it, and counts them.
func TestPassThrough(t *testing.T) {
	l := start(t, Config{})
	c := client(t)
	code, body := get(t, c, l.URL()+"/")
	if code != 200 || body != "ok host="+l.Addr() {
		t.Errorf("GET / = %d %q, want 200 ok host=%s", code, body, l.Addr())
	}
	resp, err := c.Post(l.URL()+"/echo", "application/octet-stream", bytes.NewReader(make([]byte, 100_000)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "100000" {
		t.Errorf("POST /echo of 100000 bytes: upstream read %s", got)
	}
	s := l.Stats()
	if s.Requests != 2 || s.BytesUp < 100_000 || s.BytesDown == 0 || s.Conns != 1 || s.Faults() != 0 {
		t.Errorf("Stats = %+v, want 2 requests, ≥ 100000 bytes up, some down, 1 connection, no faults", s)
	}
}

// TestLatency: each request takes at least the round trip less the
// jitter, on a fresh connection and on a kept one (a lower bound only).
func TestLatency(t *testing.T) {
	for _, cfg := range []Config{
		{Latency: 40 * time.Millisecond},
		{Latency: 40 * time.Millisecond, Jitter: 10 * time.Millisecond, Seed: 3},
	} {
		l := start(t, cfg)
		c := client(t)
		for i := range 3 {
			began := time.Now()
			get(t, c, l.URL()+"/")
			if took, least := time.Since(began), cfg.Latency-cfg.Jitter; took < least {
				t.Errorf("%v: request %d took %v, less than the round trip less the jitter (%v)", cfg, i, took, least)
			}
		}
	}
}

// TestSharedCap: 8 connections downloading together share the link's
// cap: N bytes take at least (N - burst) / cap, where a per-connection
// cap of the same figure would have let them finish 8 times sooner.
func TestSharedCap(t *testing.T) {
	const (
		capacity = 8_000_000 // B/s
		each     = 512 << 10
		conns    = 8
	)
	l := start(t, Config{Bandwidth: capacity})
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		c := client(t) // a connection each
		wg.Go(func() {
			resp, err := c.Get(fmt.Sprintf("%s/size/%d", l.URL(), each))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != each {
				errs <- fmt.Errorf("read %d bytes, %v", n, err)
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	burst := newLimiter(capacity).Burst()
	least := time.Duration(float64(conns*each-burst) / capacity * float64(time.Second))
	if took < least {
		t.Errorf("%d connections moved %d bytes in %v; a shared %d B/s needs at least %v", conns, conns*each, took, capacity, least)
	}
	if s := l.Stats(); s.Conns != conns || s.BytesDown < conns*each {
		t.Errorf("Stats = %+v, want %d connections and ≥ %d bytes down", s, conns, conns*each)
	}
}

// TestConnCapAndUpload: a connection's own cap holds, and request bodies
// are paced as responses are.
func TestConnCapAndUpload(t *testing.T) {
	const (
		capacity = 4_000_000
		size     = 1 << 20
	)
	for _, cfg := range []Config{{ConnBandwidth: capacity}, {Bandwidth: capacity}} {
		l := start(t, cfg)
		c := client(t)
		began := time.Now()
		resp, err := c.Post(l.URL()+"/echo", "application/octet-stream", bytes.NewReader(make([]byte, size)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(began)
		if string(got) != strconv.Itoa(size) {
			t.Fatalf("%v: upstream read %s bytes, want %d", cfg, got, size)
		}
		least := time.Duration(float64(size-newLimiter(capacity).Burst()) / capacity * float64(time.Second))
		if took < least {
			t.Errorf("%v: uploaded %d bytes in %v, want at least %v", cfg, size, took, least)
		}
	}
}

// TestSlowDown: above the request rate the link answers S3's 503
// SlowDown; within it (here: within its burst, whatever the timing) it
// never does.
func TestSlowDown(t *testing.T) {
	const n = 20
	l := start(t, Config{RequestRate: 2}) // a burst of 1
	c := client(t)
	began := time.Now()
	slow := 0
	for range n {
		resp, err := c.Get(l.URL() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			slow++
			if !strings.Contains(string(body), "<Code>SlowDown</Code>") || resp.Header.Get("Content-Type") != "application/xml" {
				t.Errorf("503 is not S3's SlowDown: %s %q", resp.Header.Get("Content-Type"), body)
			}
		}
	}
	// The limiter passes its burst (1) and 2 more a second.
	passed := 1 + int(time.Since(began).Seconds()*2) + 1
	if slow < n-passed || slow == 0 && passed < n {
		t.Errorf("%d requests in %v at 2/s: %d SlowDowns, want at least %d", n, time.Since(began), slow, n-passed)
	}
	if s := l.Stats(); s.SlowDowns != int64(slow) || s.Requests != n {
		t.Errorf("Stats = %+v, want %d SlowDowns of %d requests", s, slow, n)
	}

	below := start(t, Config{RequestRate: 1000}) // a burst of 100
	for range n {
		if code, body := get(t, c, below.URL()+"/"); code != 200 {
			t.Fatalf("at most %d requests with a burst of 100: %d %q", n, code, body)
		}
	}
	if s := below.Stats(); s.SlowDowns != 0 {
		t.Errorf("Stats = %+v, want no SlowDowns", s)
	}
}

// TestFaults: a plain client sees each fault as an error: a reset before
// the response, a truncated body, a stall past its timeout.
func TestFaults(t *testing.T) {
	const size = 100_000
	for _, tc := range []struct {
		name    string
		cfg     Config
		timeout time.Duration
		check   func(t *testing.T, resp *http.Response, err error)
	}{
		{"reset", Config{Reset: Fault{Every: 1}}, 0, func(t *testing.T, resp *http.Response, err error) {
			if err == nil {
				t.Fatalf("a reset request answered %s", resp.Status)
			}
			// The link carries the stage's RST on (Windows names it
			// otherwise).
			if runtime.GOOS != "windows" && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("reset: %v, want a connection reset", err)
			}
		}},
		{"truncate", Config{Truncate: Fault{Every: 1}}, 0, func(t *testing.T, resp *http.Response, err error) {
			if err != nil {
				t.Fatal(err) // the headers come through
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if !errors.Is(err, io.ErrUnexpectedEOF) || n != size/2 {
				t.Errorf("truncated body: read %d of %d bytes, %v; want %d and an unexpected EOF", n, size, err, size/2)
			}
		}},
		{"stall", Config{Stall: Fault{Every: 1}, StallFor: time.Minute}, 100 * time.Millisecond, func(t *testing.T, resp *http.Response, err error) {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("stalled request: %v, want a timeout", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := start(t, tc.cfg)
			c := client(t)
			c.Timeout = tc.timeout
			resp, err := c.Get(fmt.Sprintf("%s/size/%d", l.URL(), size))
			tc.check(t, resp, err)
			if s := l.Stats(); s.Faults() != 1 {
				t.Errorf("Stats = %+v, want 1 fault", s)
			}
		})
	}
}

// TestFaultPattern: every:N hits the N-th requests and no other; a
// probability hits a seed's repeatable share.
func TestFaultPattern(t *testing.T) {
	l := start(t, Config{Reset: Fault{Every: 3}})
	c := client(t)
	for i := 1; i <= 7; i++ {
		resp, err := c.Get(l.URL() + "/")
		if err == nil {
			resp.Body.Close()
		}
		if failed := err != nil; failed != (i%3 == 0) {
			t.Errorf("request %d: error %v, want one only every 3rd", i, err)
		}
	}
	if s := l.Stats(); s.Resets != 2 {
		t.Errorf("Stats = %+v, want 2 resets", s)
	}

	hits := func() []bool {
		l := start(t, Config{Truncate: Fault{Probability: 0.5}, Seed: 11})
		var out []bool
		for range 20 {
			resp, err := c.Get(l.URL() + "/size/10")
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			out = append(out, err != nil)
		}
		if s := l.Stats(); s.Truncations == 0 || s.Truncations == 20 {
			t.Errorf("probability 0.5: %d truncations of 20", s.Truncations)
		}
		return out
	}
	if a, b := hits(), hits(); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("one seed, two patterns:\n%v\n%v", a, b)
	}
}

// TestLoopbackOnly: the link refuses an upstream off this machine.
func TestLoopbackOnly(t *testing.T) {
	for _, up := range []string{"10.0.0.1:9000", "example.com:80", "localhost:9000", "0.0.0.0:9000", "127.0.0.1", "127.0.0.1:0"} {
		if l, err := Start(context.Background(), up, Config{}); err == nil {
			l.Close()
			t.Errorf("Start(%q) accepted it", up)
		} else if !strings.HasPrefix(err.Error(), "link: upstream") {
			t.Errorf("Start(%q): %v", up, err)
		}
	}
	if _, err := Start(context.Background(), "127.0.0.1:9000", Config{Jitter: time.Second}); err == nil {
		t.Error("Start accepted an invalid config")
	}
}

// TestClose: closing a link mid-transfer ends the client's transfer with
// an error and leaves no goroutine; so does a client that walks away
// mid-response (which leaks toxiproxy's chain unless the link mends it),
// and a context that ends.
func TestClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	up := httptest.NewServer(handler())
	defer up.Close()
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	size := 64 << 20

	// Closed mid-transfer, paced at 4 MB/s.
	l, err := Start(context.Background(), up.Listener.Addr().String(), Config{Bandwidth: 4_000_000, Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(fmt.Sprintf("%s/size/%d", l.URL(), size))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 100_000); err != nil {
		t.Fatal(err)
	}
	closeWatched(t, l)
	if n, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Errorf("the transfer went on after Close: %d more bytes", n)
	}
	resp.Body.Close()

	// The client walks away mid-response from a fast link with data in
	// flight.
	l, err = Start(context.Background(), up.Listener.Addr().String(), Config{Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = c.Get(fmt.Sprintf("%s/size/%d", l.URL(), size))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // unread: the connection closes
	time.Sleep(100 * time.Millisecond)
	closeWatched(t, l)

	// The context ends.
	ctx, cancel := context.WithCancel(context.Background())
	l, err = Start(ctx, up.Listener.Addr().String(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	get(t, c, l.URL()+"/")
	cancel()
	tr.CloseIdleConnections()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := c.Get(l.URL() + "/")
		if err != nil {
			break
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		if time.Now().After(deadline) {
			t.Fatal("the link still answers 5 s after its context ended")
		}
	}
	l.Close()
}

// closeWatched closes l in a goroutine and fails the test if Close hangs
// (as it does if toxiproxy's goroutines are stuck): the deadline only
// catches a hang, it measures nothing.
func closeWatched(t *testing.T, l *Link) {
	t.Helper()
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return in 5 s")
	}
}

// Package link is an emulated network link between headspace's loader (an
// S3 client) and a local S3-compatible object server: a listener on
// 127.0.0.1 whose connections reach the server after the delay, bandwidth
// and faults of a configured link (issue 34, "Data from a bucket").
//
// The chain, from the client:
//
//	client → emulated network (toxiproxy) → HTTP stage → object server
//
// The emulated network is toxiproxy's toxic chain, embedded as a library,
// run on each of the client's own TCP connections, in each direction:
// a delay (half the round trip, ± half the jitter, per chunk of bytes),
// then one rate.Limiter shared by all connections (the link's cap) and a
// limiter of the connection's own (an object store's per-request
// throughput). The HTTP stage, an httputil.ReverseProxy, answers
// 503 SlowDown with S3's XML error above the request rate (a second
// rate.Limiter) and injects the per-request faults; everything else goes
// to the server untouched, the signed Host header included.
//
// The network comes first, not the HTTP stage, because then what the
// client sees is what a remote store would send it: a 503 or a fault
// arrives after the round trip like any answer, the per-connection limit
// applies to the client's connections one for one (not to a proxy's pool),
// and the shared cap counts headers as well as bodies, in each direction
// separately as a full-duplex link does.
//
// Faults are decided per request, by count (every N-th) or probability
// from the seeded generator, and are named for what the client sees:
//
//   - reset: the connection is reset (RST) before any response byte;
//   - stall: no response byte for StallFor, then the response (a client
//     whose timeout is shorter gives up, as it would on a stuck request);
//   - truncate: the headers and half the body, then the connection closes
//     (the client reads an unexpected EOF).
//
// What toxiproxy does not do, and the package does itself: toxiproxy's
// toxics decide per connection (toxicity is drawn when a connection
// starts), which cannot say "every 50th request", so the faults live in
// the HTTP stage; its latency and bandwidth toxics count whole
// milliseconds and kilobytes and have no shared cap, so the package
// registers its own two toxics (delay and rate) in toxiproxy's registry;
// its Proxy leaks the goroutines of a connection whose client goes away
// mid-response (the copy stops, the toxic chain blocks for ever; Stop
// does not end them) and closes gently a connection whose other side was
// reset, so Link runs its own accept loop and hands toxiproxy connection
// ends that discard after a failed write and carry a reset on. Close ends
// every connection at once and returns when the goroutines are done.
// Toxiproxy logs through zerolog; its proxy is given a no-op logger, and
// the paths that log through zerolog's global logger (its API, toxic
// removal, its bandwidth toxic) are not used.
//
// Not emulated: a new connection's handshake round trip (toxiproxy
// accepts at once), packet loss and TCP's reaction to it, and a window
// that limits one connection to its window per round trip; in-flight
// bytes are bounded only by 1024 chunks per connection and direction.
//
// Config.Settings is the link's block for a result file: every setting
// that changes a number. Parse reads a preset with optional overrides,
// such as "cross-region,truncate=every:100".
package link

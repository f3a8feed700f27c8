// Package fetchmodel predicts the samples/s of a loader whose data is in
// a bucket behind a network link, and how much of the accelerator that
// leaves unused (headspace): the link in the what-if model (issue 34,
// "Data from a bucket", item 6).
//
// A loader that fetches every sample from object storage is held back by
// the first of these bounds, each in samples per second:
//
//   - link bandwidth: Link.Bandwidth ÷ bytes per sample;
//   - request rate: the lower of the link's limit (S3's 5,500 GETs/s per
//     prefix) and the rate the server sustained at no round trip
//     (Calibration.ServerRate), × samples per request;
//   - concurrency: Little's law, requests in flight × samples per request
//     ÷ one request's time, where a request takes the round trip, its
//     bytes at the per-connection bandwidth, and the server's own time;
//     the requests in flight are the fetchers', but no more than the
//     samples the loader lets into its pipeline at once (Fetch.Window:
//     prefetch × batch) need;
//   - host: what the loader does without a network (level local, the same
//     samples read from a local copy: decoding, transforms, batching);
//   - device: the training step itself (level device).
//
// The server's time per request is calibrated once per dataset from the
// request latency measured at no round trip (ServerTime); every other
// point (round trips, bandwidths, concurrencies) is then a prediction,
// checked against measurements by APE and Median. The model has no
// overlap term: it assumes the loader prefetches, so the slowest bound
// alone sets the rate, and it ignores a new connection's handshake
// (the emulated link does not delay it either).
package fetchmodel

import (
	"math"
	"time"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Link is the network between the loader and the store, as the model
// sees it: package link's Config in the model's units.
type Link struct {
	RTT time.Duration // round trip added to every request
	// Bandwidth is the link's shared cap in bytes/s; 0 is unlimited.
	Bandwidth float64
	// ConnBandwidth is each connection's cap in bytes/s; 0 is unlimited.
	ConnBandwidth float64
	// RequestRate is the requests/s above which the store answers 503
	// SlowDown; 0 is unlimited.
	RequestRate float64
}

// Fetch is how the loader reads: requests in flight and what each
// sample costs in requests and bytes (a result record's requests/sample
// and fetched bytes per sample).
type Fetch struct {
	Concurrency       int
	BytesPerSample    float64
	RequestsPerSample float64 // 1 for a GET per sample; less when a request serves several
	// Window is the samples the loader admits into its pipeline at once
	// (prefetch × batch); 0 is no bound. Fetchers beyond the requests
	// those samples need wait for the window, whatever Concurrency says.
	Window int
}

// InFlight is the requests in flight the fetch can keep: Concurrency, but
// no more than the window's samples need (at least one).
func (f Fetch) InFlight() float64 {
	c := float64(f.Concurrency)
	if f.Window > 0 && f.RequestsPerSample > 0 {
		c = min(c, max(1, math.Ceil(float64(f.Window)*f.RequestsPerSample)))
	}
	return c
}

// BytesPerRequest is the body bytes of one request.
func (f Fetch) BytesPerRequest() float64 {
	if f.RequestsPerSample <= 0 {
		return 0
	}
	return f.BytesPerSample / f.RequestsPerSample
}

// Calibration is what the model takes from measurements of one dataset:
// the server's time per request and rate, and the bounds without a
// network. A zero rate is no bound.
type Calibration struct {
	// ServerTime is a request's time beyond the round trip and its
	// transfer (ServerTime, from the latency at no round trip).
	ServerTime time.Duration
	// ServerRate is the requests/s the store and the client sustained at
	// no round trip: the most measured over the concurrencies.
	ServerRate float64
	// HostRate is samples/s with the data local (level local).
	HostRate float64
	// DeviceRate is samples/s with the data on the device (level device).
	DeviceRate float64
}

// The bounds, by the names Prediction.Bound takes.
const (
	BoundBandwidth   = "link bandwidth"
	BoundRequestRate = "request rate"
	BoundConcurrency = "concurrency"
	BoundHost        = "host"
	BoundDevice      = "device"
)

// Term is one bound's samples/s.
type Term struct {
	Name          string
	SamplesPerSec float64 // +Inf where the bound does not apply
}

// Prediction is the model's answer for one point.
type Prediction struct {
	SamplesPerSec float64
	// Bound names the term that sets SamplesPerSec (the first of equals,
	// in Terms' order).
	Bound string
	// Headspace is 1 − SamplesPerSec ÷ DeviceRate: the share of the
	// accelerator's time the loader leaves idle; 0 without a DeviceRate.
	Headspace float64
	// Terms is every bound, in the order of the package comment.
	Terms []Term
}

// RequestTime is one request's predicted time: the round trip, its bytes
// at the per-connection bandwidth, and the server's time.
func RequestTime(c Calibration, f Fetch, l Link) time.Duration {
	t := l.RTT + c.ServerTime
	if l.ConnBandwidth > 0 {
		t += time.Duration(math.Round(f.BytesPerRequest() / l.ConnBandwidth * 1e9))
	}
	return t
}

// Predict is the samples/s of fetch f over link l for a dataset
// calibrated by c: the lowest of the bounds (package comment).
func Predict(c Calibration, f Fetch, l Link) Prediction {
	inf := math.Inf(1)
	rate := func(v float64) float64 {
		if v <= 0 {
			return inf
		}
		return v
	}
	bw := inf
	if l.Bandwidth > 0 && f.BytesPerSample > 0 {
		bw = l.Bandwidth / f.BytesPerSample
	}
	rr := inf
	if f.RequestsPerSample > 0 {
		rr = min(rate(l.RequestRate), rate(c.ServerRate)) / f.RequestsPerSample
	}
	conc := inf
	if t := RequestTime(c, f, l); f.RequestsPerSample > 0 && t > 0 {
		conc = f.InFlight() * 1e9 / float64(t) / f.RequestsPerSample
	}
	p := Prediction{Terms: []Term{
		{BoundBandwidth, bw},
		{BoundRequestRate, rr},
		{BoundConcurrency, conc},
		{BoundHost, rate(c.HostRate)},
		{BoundDevice, rate(c.DeviceRate)},
	}}
	p.SamplesPerSec = inf
	for _, t := range p.Terms {
		if t.SamplesPerSec < p.SamplesPerSec {
			p.SamplesPerSec, p.Bound = t.SamplesPerSec, t.Name
		}
	}
	p.Headspace = Headspace(p.SamplesPerSec, c.DeviceRate)
	return p
}

// Headspace is 1 − rate ÷ device: the share of the accelerator's time a
// loader at rate leaves idle (0 without a device rate, never below 0).
func Headspace(rate, device float64) float64 {
	if device <= 0 || math.IsInf(rate, 1) {
		return 0
	}
	return max(0, 1-rate/device)
}

// ServerTime calibrates Calibration.ServerTime from a measured mean
// request latency over link l (normally one with no round trip): the
// latency less the round trip and the transfer of bytesPerRequest at the
// per-connection bandwidth, never below 0.
func ServerTime(latency time.Duration, bytesPerRequest float64, l Link) time.Duration {
	t := latency - l.RTT
	if l.ConnBandwidth > 0 {
		t -= time.Duration(math.Round(bytesPerRequest / l.ConnBandwidth * 1e9))
	}
	return max(0, t)
}

// APE is the absolute percentage error of predicted against measured:
// |predicted − measured| ÷ measured × 100 (NaN for a measured 0).
func APE(predicted, measured float64) float64 {
	if measured == 0 {
		return math.NaN()
	}
	return math.Abs(predicted-measured) / math.Abs(measured) * 100
}

// Median is the median of xs, NaNs left out (summary.Median: for an even
// count, benchmath's point between the middle two); NaN for none.
func Median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return summary.Median(v) // NaN for none
}

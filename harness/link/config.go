package link

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/internal/setting"
)

// Config is an emulated link: what the network between the loader and its
// object server adds (delay, a bandwidth cap) and what an object store
// answers when pushed too hard or when things break (503 SlowDown, resets,
// stalls, truncated bodies). The zero Config is a pass-through link.
type Config struct {
	// Latency is the round-trip time the link adds: each direction
	// delays every chunk of bytes by half of it (a fresh connection's
	// handshake is not delayed; see the package comment).
	Latency time.Duration
	// Jitter spreads the round trip uniformly over Latency ± Jitter
	// (each direction draws within ± Jitter/2). At most Latency.
	Jitter time.Duration
	// Bandwidth is the link's shared cap in bytes per second in each
	// direction, across all connections (0: unlimited).
	Bandwidth int64
	// ConnBandwidth caps each connection in bytes per second in each
	// direction (0: unlimited), as an object store's per-request
	// throughput does.
	ConnBandwidth int64
	// RequestRate is the sustained requests per second above which the
	// link answers 503 SlowDown instead of forwarding (0: unlimited);
	// bursts of a tenth of a second's worth pass.
	RequestRate float64
	// Reset, Stall and Truncate say which requests fail and how (see
	// Fault): a reset drops the connection before any response byte, a
	// stall holds the response for StallFor before its first byte, a
	// truncation closes the connection after half the response body.
	Reset, Stall, Truncate Fault
	// StallFor is how long a stalled response is held; required when
	// Stall is set.
	StallFor time.Duration
	// Seed seeds the link's random draws (jitter and fault
	// probabilities), so one Config repeats its faults' pattern.
	Seed uint64
}

// Fault says which requests a fault hits: every Every-th request (the
// Every-th, 2·Every-th, …) or each request with Probability. The zero Fault
// hits none; setting both is an error.
type Fault struct {
	Every       int64
	Probability float64
}

// IsZero reports whether f hits no request.
func (f Fault) IsZero() bool { return f.Every == 0 && f.Probability == 0 }

// String writes f as ParseFault reads it: "never", "every:N" or the
// probability.
func (f Fault) String() string {
	switch {
	case f.Every > 0:
		return "every:" + strconv.FormatInt(f.Every, 10)
	case f.Probability > 0:
		return strconv.FormatFloat(f.Probability, 'g', -1, 64)
	}
	return "never"
}

// Limits on values, so that every accepted value is one the link can
// apply (and a typo of a few orders of magnitude is caught).
const (
	maxBandwidth   = 1_000_000_000_000 // bytes/s: 8 Tbit/s
	maxRequestRate = 1e9
	maxDuration    = time.Hour
	maxEvery       = 1_000_000_000_000
)

// Presets are the named links, each the reasoning behind its figures (none
// is a measurement of ours):
//
//   - none: a pass-through (the zero Config); a run without a link skips
//     Start altogether.
//   - same-region: a machine in the object store's region: 1 ms ± 0.2 ms
//     round trip (AWS describes the round trip between its zones as single-digit
//     milliseconds; within one zone it is a fraction of one), a 10 Gbit/s
//     cap (a common instance's network bandwidth).
//   - cross-region: 30 ms ± 5 ms (public inter-region measurements run
//     from about 10 ms between neighbouring regions to 60–70 ms across a
//     continent; 30 ms is a middle one), 1 Gbit/s shared.
//   - home: a fixed broadband line to the nearest region: 20 ms ± 5 ms,
//     100 Mbit/s (about the median fixed download speed in public speed-test
//     indices); upload is as fast as download here, which real lines are not.
//
// The three remote presets share the object store's own limits: 90 MB/s per
// connection (AWS's S3 performance guidance plans one concurrent request per
// 85–90 MB/s) and 503 SlowDown above 5,500 requests per second (S3's
// documented GET/HEAD rate per partitioned prefix; a benchmark's bucket is
// one prefix). No preset injects faults: those are always explicit.
var presets = map[string]Config{
	"none": {},
	"same-region": {
		Latency: time.Millisecond, Jitter: 200 * time.Microsecond,
		Bandwidth: 10_000_000_000 / 8, ConnBandwidth: 90_000_000, RequestRate: 5500,
	},
	"cross-region": {
		Latency: 30 * time.Millisecond, Jitter: 5 * time.Millisecond,
		Bandwidth: 1_000_000_000 / 8, ConnBandwidth: 90_000_000, RequestRate: 5500,
	},
	"home": {
		Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond,
		Bandwidth: 100_000_000 / 8, ConnBandwidth: 90_000_000, RequestRate: 5500,
	},
}

// PresetNames lists the presets' names, sorted.
func PresetNames() []string {
	return slices.Sorted(maps.Keys(presets))
}

// Preset returns the named preset (see presets).
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("link: unknown preset %q (one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	return c, nil
}

// PresetName is the name of the preset c equals, or "custom".
func (c Config) PresetName() string {
	for _, name := range PresetNames() {
		if presets[name] == c {
			return name
		}
	}
	return "custom"
}

// Validate says what in c the link cannot apply, in one line.
func (c Config) Validate() error {
	switch {
	case c.Latency < 0 || c.Latency > maxDuration:
		return fmt.Errorf("link: latency %v outside 0 to %v", c.Latency, maxDuration)
	case c.Jitter < 0 || c.Jitter > c.Latency:
		return fmt.Errorf("link: jitter %v outside 0 to the latency (%v)", c.Jitter, c.Latency)
	case c.Bandwidth < 0 || c.Bandwidth > maxBandwidth:
		return fmt.Errorf("link: bandwidth %d B/s outside 0 to %d", c.Bandwidth, int64(maxBandwidth))
	case c.ConnBandwidth < 0 || c.ConnBandwidth > maxBandwidth:
		return fmt.Errorf("link: conn-bandwidth %d B/s outside 0 to %d", c.ConnBandwidth, int64(maxBandwidth))
	case !(c.RequestRate >= 0 && c.RequestRate <= maxRequestRate): // also NaN
		return fmt.Errorf("link: request-rate %v outside 0 to %g", c.RequestRate, maxRequestRate)
	case c.StallFor < 0 || c.StallFor > maxDuration:
		return fmt.Errorf("link: stall-for %v outside 0 to %v", c.StallFor, maxDuration)
	case !c.Stall.IsZero() && c.StallFor == 0:
		return errors.New("link: stall is set but stall-for is 0")
	}
	for _, f := range []struct {
		name string
		f    Fault
	}{{"reset", c.Reset}, {"stall", c.Stall}, {"truncate", c.Truncate}} {
		if err := f.f.validate(); err != nil {
			return fmt.Errorf("link: %s: %w", f.name, err)
		}
	}
	return nil
}

func (f Fault) validate() error {
	switch {
	case f.Every != 0 && f.Probability != 0:
		return errors.New("both every and a probability set")
	case f.Every < 0 || f.Every > maxEvery:
		return fmt.Errorf("every %d outside 1 to %d", f.Every, int64(maxEvery))
	case !(f.Probability >= 0 && f.Probability <= 1):
		return fmt.Errorf("probability %v outside 0 to 1", f.Probability)
	}
	return nil
}

// pairs is c as key-value pairs, the one list String and Settings write
// and Parse reads: every setting that changes a number.
func (c Config) pairs() [][2]string {
	return [][2]string{
		{"latency", c.Latency.String()},
		{"jitter", c.Jitter.String()},
		{"bandwidth", FormatBandwidth(c.Bandwidth)},
		{"conn-bandwidth", FormatBandwidth(c.ConnBandwidth)},
		{"request-rate", formatRate(c.RequestRate)},
		{"reset", c.Reset.String()},
		{"stall", c.Stall.String()},
		{"stall-for", c.StallFor.String()},
		{"truncate", c.Truncate.String()},
		{"seed", strconv.FormatUint(c.Seed, 10)},
	}
}

// String writes c as Parse reads it: "key=value,…" with every key.
func (c Config) String() string {
	var b strings.Builder
	for i, p := range c.pairs() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p[0] + "=" + p[1])
	}
	return b.String()
}

// Settings is c's block for a result file: "link" (the preset c equals,
// or custom) then every setting as "link-<key>". A run without a link
// records none of them, so earlier result files keep their setup.
func (c Config) Settings() []setting.Setting {
	out := []setting.Setting{{Key: "link", Value: c.PresetName()}}
	for _, p := range c.pairs() {
		out = append(out, setting.Setting{Key: "link-" + p[0], Value: p[1]})
	}
	return out
}

// Parse reads a link from a spec: a preset's name, or key=value settings
// (the keys of String), or a preset followed by settings that override it:
// "cross-region", "latency=5ms,bandwidth=1Gbit/s",
// "home,truncate=every:100". Settings start from none.
func Parse(spec string) (Config, error) {
	parts := strings.Split(spec, ",")
	var c Config
	if first := strings.TrimSpace(parts[0]); !strings.Contains(first, "=") {
		p, err := Preset(first)
		if err != nil {
			return Config{}, err
		}
		c, parts = p, parts[1:]
	}
	seen := map[string]bool{}
	for _, part := range parts {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Config{}, fmt.Errorf("link: %q is not key=value (or a preset first)", part)
		}
		if seen[key] {
			return Config{}, fmt.Errorf("link: %s given twice", key)
		}
		seen[key] = true
		if err := c.set(key, value); err != nil {
			return Config{}, err
		}
	}
	return c, c.Validate()
}

// set sets one key of c from its text.
func (c *Config) set(key, value string) error {
	var err error
	switch key {
	case "latency":
		c.Latency, err = ParseDuration(key, value)
	case "jitter":
		c.Jitter, err = ParseDuration(key, value)
	case "stall-for":
		c.StallFor, err = ParseDuration(key, value)
	case "bandwidth":
		c.Bandwidth, err = ParseBandwidth(value)
	case "conn-bandwidth":
		c.ConnBandwidth, err = ParseBandwidth(value)
	case "request-rate":
		c.RequestRate, err = ParseRequestRate(value)
	case "reset":
		c.Reset, err = ParseFault(value)
	case "stall":
		c.Stall, err = ParseFault(value)
	case "truncate":
		c.Truncate, err = ParseFault(value)
	case "seed":
		c.Seed, err = strconv.ParseUint(value, 10, 64)
		if err != nil {
			err = fmt.Errorf("seed %q is not an unsigned integer", value)
		}
	default:
		keys := make([]string, 0, 10)
		for _, p := range (Config{}).pairs() {
			keys = append(keys, p[0])
		}
		return fmt.Errorf("link: unknown setting %q (one of %s)", key, strings.Join(keys, ", "))
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "link: ") {
			err = fmt.Errorf("link: %s: %w", key, err)
		}
		return err
	}
	return nil
}

// ParseDuration reads a non-negative duration of at most an hour for the
// setting name ("1ms", "200µs", "200us").
func ParseDuration(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxDuration {
		return 0, fmt.Errorf("link: %s %q is not a duration from 0 to 1h (like 20ms)", name, s)
	}
	return d, nil
}

// bandwidthUnits are the units ParseBandwidth reads, in bits per second
// for each one. Case matters: "Mb/s" is megabits, "MB/s" megabytes.
var bandwidthUnits = map[string]int64{
	"bit/s": 1, "kbit/s": 1e3, "Kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9, "Tbit/s": 1e12,
	"b/s": 1, "kb/s": 1e3, "Kb/s": 1e3, "Mb/s": 1e6, "Gb/s": 1e9, "Tb/s": 1e12,
	"bps": 1, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12,
	"B/s": 8, "kB/s": 8e3, "KB/s": 8e3, "MB/s": 8e6, "GB/s": 8e9, "TB/s": 8e12,
	"KiB/s": 8 << 10, "MiB/s": 8 << 20, "GiB/s": 8 << 30, "TiB/s": 8 << 40,
}

// ParseBandwidth reads a bandwidth in bytes per second: a decimal number
// and a unit ("10Gbit/s", "10 Gb/s", "100MB/s", "1.5MiB/s"), or "0" or
// "unlimited" for no cap. Fractions of a byte per second are dropped.
func ParseBandwidth(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "0" || t == "unlimited" {
		return 0, nil
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	r, ok := new(big.Rat).SetString(num)
	if num == "" || strings.Count(num, ".") > 1 || num == "." || !ok {
		return 0, fmt.Errorf("link: bandwidth %q does not start with a decimal number (like 10Gbit/s)", s)
	}
	bits, ok := bandwidthUnits[unit]
	if !ok {
		return 0, fmt.Errorf("link: bandwidth %q: unit %q is not one of bit/s, kbit/s, Mbit/s, Gbit/s, Gb/s, Gbps, B/s, kB/s, MB/s, GB/s, MiB/s, GiB/s (or 0, unlimited)", s, unit)
	}
	r.Mul(r, new(big.Rat).SetFrac64(bits, 8)) // bytes per second
	bytes := new(big.Int).Quo(r.Num(), r.Denom())
	switch {
	case bytes.Cmp(big.NewInt(maxBandwidth)) > 0:
		return 0, fmt.Errorf("link: bandwidth %q above %s", s, FormatBandwidth(maxBandwidth))
	case bytes.Sign() == 0 && r.Sign() > 0:
		return 0, fmt.Errorf("link: bandwidth %q below 1 B/s", s)
	}
	return bytes.Int64(), nil
}

// FormatBandwidth writes bytes per second as ParseBandwidth reads it, in
// exact bits per second with the largest prefix that divides them
// ("10Gbit/s", "720Mbit/s"); 0 is "unlimited".
func FormatBandwidth(bytesPerSecond int64) string {
	if bytesPerSecond == 0 {
		return "unlimited"
	}
	bits := big.NewInt(bytesPerSecond)
	bits.Mul(bits, big.NewInt(8))
	for _, u := range []struct {
		name string
		div  int64
	}{{"Tbit/s", 1e12}, {"Gbit/s", 1e9}, {"Mbit/s", 1e6}, {"kbit/s", 1e3}} {
		q, m := new(big.Int).QuoRem(bits, big.NewInt(u.div), new(big.Int))
		if m.Sign() == 0 {
			return q.String() + u.name
		}
	}
	return bits.String() + "bit/s"
}

// ParseRequestRate reads requests per second: "5500", "5500/s", or "0" or
// "unlimited" for no limit.
func ParseRequestRate(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	if t == "unlimited" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(t, 64)
	if err != nil || !(r >= 0 && r <= maxRequestRate) {
		return 0, fmt.Errorf("link: request-rate %q is not a number of requests per second from 0 to %g", s, maxRequestRate)
	}
	return r, nil
}

func formatRate(r float64) string {
	if r == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(r, 'g', -1, 64) + "/s"
}

// ParseFault reads a Fault: "never" or "0", "every:N" (every N-th request),
// or a probability per request ("0.01" or "1%").
func ParseFault(s string) (Fault, error) {
	t := strings.TrimSpace(s)
	if t == "never" {
		return Fault{}, nil
	}
	if n, ok := strings.CutPrefix(t, "every:"); ok {
		every, err := strconv.ParseInt(n, 10, 64)
		if err != nil || every < 1 || every > maxEvery {
			return Fault{}, fmt.Errorf("fault %q: every:N needs N from 1 to %d", s, int64(maxEvery))
		}
		return Fault{Every: every}, nil
	}
	scale := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = p, 100
	}
	p, err := strconv.ParseFloat(t, 64)
	if err == nil {
		p /= scale
	}
	if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
		return Fault{}, fmt.Errorf("fault %q is not never, every:N or a probability from 0 to 1 (or 0%% to 100%%)", s)
	}
	return Fault{Probability: p}, nil
}

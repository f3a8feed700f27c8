package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Load-time distributions accepted in Config.LoadDist.
const (
	// Constant: every batch takes exactly Load.
	Constant = "constant"
	// Normal: Normal(Load, LoadStddev), resampled until positive.
	Normal = "normal"
	// LogNormal: log-normal with mean Load and standard deviation
	// LoadStddev (of the load time itself, not of its logarithm).
	LogNormal = "lognormal"
)

// DefaultPrefetch is PyTorch DataLoader's default prefetch_factor: batches
// outstanding per worker.
const DefaultPrefetch = 2

// Bounds on the work of one simulation: Duration/Step may not exceed
// maxBatches, nor Loaders·Prefetch maxOutstanding.
// Durations are capped at maxDuration (about 146 years) so that adding
// two never overflows.
const (
	maxBatches     = 10_000_000
	maxOutstanding = 1 << 20
	maxDuration    = time.Duration(1 << 62)
)

// Config describes a simulated pipeline. The zero value is not valid:
// Loaders, Load, Step and Duration must be set.
type Config struct {
	// Loaders is the number of loader workers (DataLoader num_workers), ≥ 1.
	Loaders int
	// Load is the mean time a worker takes to load one whole batch, > 0.
	Load time.Duration
	// LoadDist is the distribution of load times: Constant, Normal or
	// LogNormal. Empty means Constant when LoadStddev is 0 and Normal
	// otherwise.
	LoadDist string
	// LoadStddev is the standard deviation of load times, ≥ 0; it must be 0
	// for Constant.
	LoadStddev time.Duration
	// Step is the mean time the model takes for forward+backward on one
	// batch, > 0.
	Step time.Duration
	// StepStddev is the standard deviation of step times, ≥ 0 (normal,
	// resampled until positive); 0 for constant steps.
	StepStddev time.Duration
	// Duration is the simulated time, > 0.
	Duration time.Duration
	// Prefetch is the number of batches outstanding per worker (DataLoader
	// prefetch_factor), ≥ 1; 0 means DefaultPrefetch.
	Prefetch int
	// Seed seeds the random load and step times.
	Seed uint64
}

// normalize returns c with defaults filled in, or the first problem found.
func (c Config) normalize() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("sim: "+format, args...)) }
	if c.Loaders < 1 {
		bad("loaders must be ≥ 1, got %d", c.Loaders)
	}
	if c.Load <= 0 {
		bad("load time must be > 0, got %v", c.Load)
	}
	if c.LoadStddev < 0 {
		bad("load stddev must be ≥ 0, got %v", c.LoadStddev)
	}
	if c.Step <= 0 {
		bad("step time must be > 0, got %v", c.Step)
	}
	if c.StepStddev < 0 {
		bad("step stddev must be ≥ 0, got %v", c.StepStddev)
	}
	if c.Duration <= 0 || c.Duration > maxDuration {
		bad("duration must be > 0 and ≤ %v, got %v", maxDuration, c.Duration)
	}
	if c.Prefetch < 0 {
		bad("prefetch must be ≥ 1 (0 for the default %d), got %d", DefaultPrefetch, c.Prefetch)
	}
	if c.Prefetch == 0 {
		c.Prefetch = DefaultPrefetch
	}
	switch c.LoadDist {
	case "":
		c.LoadDist = Constant
		if c.LoadStddev > 0 {
			c.LoadDist = Normal
		}
	case Constant:
		if c.LoadStddev != 0 {
			bad("load stddev %v given with the constant distribution", c.LoadStddev)
		}
	case Normal, LogNormal:
	default:
		bad("unknown load distribution %q (want %q, %q or %q)", c.LoadDist, Constant, Normal, LogNormal)
	}
	if c.Step > 0 && c.Duration > 0 && c.Duration/c.Step > maxBatches {
		bad("duration/step = %d batches, more than the limit %d", c.Duration/c.Step, maxBatches)
	}
	if c.Loaders > 0 && c.Prefetch > 0 && c.Loaders > maxOutstanding/c.Prefetch {
		bad("loaders×prefetch = %d×%d exceeds the limit %d", c.Loaders, c.Prefetch, maxOutstanding)
	}
	return c, errors.Join(errs...)
}

// Validate reports whether c describes a simulation Run accepts.
func (c Config) Validate() error {
	_, err := c.normalize()
	return err
}

// sampler draws durations from one distribution with its own random stream.
type sampler struct {
	rng      *rand.Rand
	dist     string
	mean, sd float64 // nanoseconds
	mu, sig  float64 // lognormal parameters
}

func newSampler(seed, stream uint64, dist string, mean, sd time.Duration) *sampler {
	s := &sampler{rng: rand.New(rand.NewPCG(seed, stream)), dist: dist, mean: float64(mean), sd: float64(sd)}
	if sd == 0 {
		s.dist = Constant
	}
	if s.dist == LogNormal {
		// If X = exp(N(mu, sig²)), E[X] = exp(mu+sig²/2) and
		// Var[X] = (exp(sig²)-1)·E[X]².
		s2 := math.Log1p((s.sd / s.mean) * (s.sd / s.mean))
		s.sig = math.Sqrt(s2)
		s.mu = math.Log(s.mean) - s2/2
	}
	return s
}

// next returns the next duration, in [1ns, maxDuration].
func (s *sampler) next() time.Duration {
	var x float64 // nanoseconds
	switch s.dist {
	case Normal:
		for x = 0; x < 0.5; { // resample until it rounds to ≥ 1ns
			x = s.mean + s.sd*s.rng.NormFloat64()
		}
	case LogNormal:
		x = math.Exp(s.mu + s.sig*s.rng.NormFloat64())
	default:
		x = s.mean
	}
	if x >= float64(maxDuration) {
		return maxDuration
	}
	return max(time.Duration(math.Round(x)), 1)
}

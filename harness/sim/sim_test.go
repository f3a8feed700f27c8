package sim

import (
	"bytes"
	"image/gif"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// post is the setting of the post's animations: 7 loaders, 100 ms steps,
// 30 s.
func post(load time.Duration) Config {
	return Config{Loaders: 7, Load: load, Step: 100 * ms, Duration: 30 * time.Second}
}

func run(t *testing.T, c Config) *Result {
	t.Helper()
	r, err := Run(c)
	if err != nil {
		t.Fatalf("Run(%v): %v", c, err)
	}
	return r
}

func TestPostConstantLoads(t *testing.T) {
	for _, tc := range []struct {
		load    time.Duration
		batches int
	}{
		{2 * time.Second, 98},
		{700 * ms, 293}, // first batch at 0.7 s, then back to back
		{350 * ms, 296},
	} {
		r := run(t, post(tc.load))
		if r.Batches != tc.batches {
			t.Errorf("load %v: %d batches, want %d", tc.load, r.Batches, tc.batches)
		}
	}
}

func TestPostHaltsEveryNBatches(t *testing.T) {
	r := run(t, post(2*time.Second))
	h := r.Halting(r.Config.Step)
	if !h.Regular || h.Every != 7 || len(h.Runs) != 14 || h.Share != 1 {
		t.Fatalf("halting = %+v, want regular every 7 over 14 runs", h)
	}
	for i, g := range h.Gaps[1:] {
		if d := g.End - g.Start; d != 1300*ms {
			t.Errorf("halt %d lasts %v, want 1.3s", i, d)
		}
	}
	if got, want := h.String(), "halts every 7 batches"; !strings.Contains(got, want) {
		t.Errorf("String() = %q, want it to contain %q", got, want)
	}
	// Model-bound runs do not halt after the first batch.
	if h := run(t, post(350*ms)).Halting(100 * ms); len(h.Runs) != 0 || h.Regular {
		t.Errorf("350ms: halting = %+v, want none", h)
	}
}

// TestPostVaryingLoads checks the calibration stated in the package doc:
// normal load times with a standard deviation of 22% of the mean, averaged
// over seeds 1…20, give about 275 batches at 700 ms and 295 at 350 ms.
func TestPostVaryingLoads(t *testing.T) {
	for _, tc := range []struct {
		load     time.Duration
		dist     string
		min, max float64
	}{
		{700 * ms, Normal, 273, 279},
		{350 * ms, Normal, 294.5, 297},
		{700 * ms, LogNormal, 272, 278},
		{350 * ms, LogNormal, 294.5, 297},
	} {
		sum := 0
		const seeds = 20
		for seed := uint64(1); seed <= seeds; seed++ {
			c := post(tc.load)
			c.LoadDist, c.LoadStddev, c.Seed = tc.dist, tc.load*22/100, seed
			sum += run(t, c).Batches
		}
		if m := float64(sum) / seeds; m < tc.min || m > tc.max {
			t.Errorf("%s %v: mean %.1f batches over %d seeds, want %v…%v", tc.dist, tc.load, m, seeds, tc.min, tc.max)
		}
	}
}

func TestMoreLoadersNeverHurt(t *testing.T) {
	// Constant loads: the count never drops as loaders are added.
	for _, tc := range []struct {
		name     string
		load     time.Duration
		prefetch int
	}{
		{"2s", 2 * time.Second, 2},
		{"700ms", 700 * ms, 2},
		{"350ms", 350 * ms, 2},
		{"1s-prefetch1", time.Second, 1},
		{"1s-prefetch4", time.Second, 4},
		{"130ms", 130 * ms, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := 0
			for n := 1; n <= 12; n++ {
				c := post(tc.load)
				c.Loaders, c.Prefetch, c.Duration = n, tc.prefetch, 10*time.Second
				b := run(t, c).Batches
				if b < prev {
					t.Errorf("%d loaders: %d batches < %d with %d", n, b, prev, n-1)
				}
				prev = b
			}
		})
	}
	// Random loads: for one seed an extra loader reshuffles which loader
	// gets which batch and can lose a batch or two, but the mean over
	// seeds never drops.
	for _, dist := range []string{Normal, LogNormal} {
		prev := 0
		for n := 1; n <= 10; n++ {
			sum := 0
			for seed := range uint64(20) {
				c := Config{Loaders: n, Load: 700 * ms, LoadDist: dist, LoadStddev: 230 * ms, Step: 100 * ms, Duration: 10 * time.Second, Seed: seed}
				sum += run(t, c).Batches
			}
			if sum < prev {
				t.Errorf("%s, %d loaders: %d batches over 20 seeds < %d with %d", dist, n, sum, prev, n-1)
			}
			prev = sum
		}
	}
}

func TestFasterLoadingNeverHurts(t *testing.T) {
	// Scaling the mean and the spread together scales every batch's load
	// time (same seed, same draws), which can never delay any event: this
	// holds seed by seed.
	for _, tc := range []struct {
		name    string
		dist    string
		cv      float64 // stddev / mean
		loaders int
	}{
		{"constant-7", Constant, 0, 7},
		{"constant-1", Constant, 0, 1},
		{"normal-7", Normal, 0.3, 7},
		{"normal-3", Normal, 0.3, 3},
		{"lognormal-7", LogNormal, 0.5, 7},
		{"lognormal-2", LogNormal, 0.5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				prev := 0
				for _, load := range []time.Duration{3000 * ms, 2000 * ms, 1000 * ms, 700 * ms, 500 * ms, 350 * ms, 100 * ms, 10 * ms} {
					c := Config{Loaders: tc.loaders, Load: load, LoadDist: tc.dist, LoadStddev: time.Duration(tc.cv * float64(load)),
						Step: 100 * ms, Duration: 10 * time.Second, Seed: seed}
					b := run(t, c).Batches
					if b < prev {
						t.Errorf("seed %d, load %v: %d batches < %d with slower loads", seed, load, b, prev)
					}
					prev = b
				}
			}
		})
	}
}

// TestConservation follows every batch through the event log: each load
// that started either finished or is in progress at the end, and each
// batch loaded was either taken by the model or is still queued.
func TestConservation(t *testing.T) {
	for _, c := range []Config{
		post(2 * time.Second),
		post(700 * ms),
		{Loaders: 7, Load: 700 * ms, LoadDist: Normal, LoadStddev: 300 * ms, Step: 100 * ms, StepStddev: 30 * ms, Duration: 30 * time.Second, Seed: 3},
		{Loaders: 3, Load: 200 * ms, LoadDist: LogNormal, LoadStddev: 400 * ms, Step: 100 * ms, Duration: 20 * time.Second, Prefetch: 5, Seed: 4},
		{Loaders: 16, Load: 90 * ms, Step: 100 * ms, Duration: 7 * time.Second, Prefetch: 1},
		{Loaders: 1, Load: 1 * time.Second, Step: 3 * time.Second, Duration: 10 * time.Second},
	} {
		r := run(t, c)
		type life struct{ started, loaded, taken, stepped bool }
		b := map[int]*life{}
		get := func(i int) *life {
			if b[i] == nil {
				b[i] = &life{}
			}
			return b[i]
		}
		var last time.Duration
		for _, e := range r.Events {
			if e.At < last || e.At > c.Duration {
				t.Fatalf("%v: event %+v out of order or after the end", c, e)
			}
			last = e.At
			l := get(e.Batch)
			if e.Loader != e.Batch%c.Loaders {
				t.Fatalf("%v: %+v: batch on the wrong loader", c, e)
			}
			switch e.Kind {
			case LoadStart:
				l.started = true
			case LoadEnd:
				if !l.started || l.loaded {
					t.Fatalf("%v: %+v: load end without start", c, e)
				}
				l.loaded = true
			case StepStart:
				if !l.loaded || l.taken {
					t.Fatalf("%v: %+v: step on a batch not loaded", c, e)
				}
				l.taken = true
			case StepEnd:
				if !l.taken || l.stepped {
					t.Fatalf("%v: %+v: step end without start", c, e)
				}
				l.stepped = true
			}
		}
		var started, loaded, taken, stepped int
		for i, l := range b {
			started, loaded, taken, stepped = started+btoi(l.started), loaded+btoi(l.loaded), taken+btoi(l.taken), stepped+btoi(l.stepped)
			if l.taken && i > 0 && !b[i-1].taken {
				t.Errorf("%v: batch %d taken before batch %d", c, i, i-1)
			}
		}
		if loaded != r.Loaded || taken != r.Consumed || stepped != r.Batches || started-loaded != r.Loading {
			t.Errorf("%v: log has %d started, %d loaded, %d taken, %d stepped; result %+v", c, started, loaded, taken, stepped, r)
		}
		if r.Loaded != r.Consumed+r.Queued {
			t.Errorf("%v: loaded %d ≠ consumed %d + queued %d", c, r.Loaded, r.Consumed, r.Queued)
		}
		if d := r.Consumed - r.Batches; d != 0 && d != 1 {
			t.Errorf("%v: consumed %d, completed %d", c, r.Consumed, r.Batches)
		}
		// Every loader holds at most Prefetch batches, so the pipeline
		// never holds more than Prefetch·Loaders.
		if r.MaxQueueLength > r.Config.Prefetch*c.Loaders || r.Queued+r.Loading > r.Config.Prefetch*c.Loaders {
			t.Errorf("%v: queue %d (max %d) + loading %d exceed prefetch", c, r.Queued, r.MaxQueueLength, r.Loading)
		}
		if r.ModelIdle < 0 || r.ModelIdle > 1 || r.MeanQueueLength < 0 || r.MeanQueueLength > float64(r.MaxQueueLength) {
			t.Errorf("%v: idle %v, mean queue %v (max %d)", c, r.ModelIdle, r.MeanQueueLength, r.MaxQueueLength)
		}
		if err := r.Timeline.Validate(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestMetrics(t *testing.T) {
	// 2 s constant loads: the model steps 98×100 ms of the 30 s.
	r := run(t, post(2*time.Second))
	if want := 1 - 9.8/30; abs(r.ModelIdle-want) > 1e-9 {
		t.Errorf("idle %v, want %v", r.ModelIdle, want)
	}
	// Per round, batch j of 7 waits j×100 ms in the queue: 2.1 batch·s per
	// round, 14 complete rounds, plus the 7 batches that arrive at 30 s.
	if want := 14 * 2.1 / 30; abs(r.MeanQueueLength-want) > 1e-9 {
		t.Errorf("mean queue %v, want %v", r.MeanQueueLength, want)
	}
	if r.MaxQueueLength != 7 || r.Queued != 7 || r.Loaded != 105 || r.Consumed != 98 {
		t.Errorf("result %+v", r)
	}
}

func abs(x float64) float64 { return max(x, -x) }

func TestDeterministic(t *testing.T) {
	c := Config{Loaders: 5, Load: 600 * ms, LoadDist: LogNormal, LoadStddev: 300 * ms, Step: 100 * ms, StepStddev: 20 * ms, Duration: 10 * time.Second, Seed: 42}
	a, b := run(t, c), run(t, c)
	if len(a.Events) != len(b.Events) {
		t.Fatal("same seed, different runs")
	}
	for i := range a.Events {
		if a.Events[i] != b.Events[i] {
			t.Fatalf("same seed, event %d differs: %+v vs %+v", i, a.Events[i], b.Events[i])
		}
	}
	c.Seed++
	if d := run(t, c); d.Batches == a.Batches && d.MeanQueueLength == a.MeanQueueLength {
		t.Error("different seeds gave identical runs")
	}
}

func TestInvalidConfig(t *testing.T) {
	ok := post(time.Second)
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"zero loaders", func(c *Config) { c.Loaders = 0 }},
		{"negative loaders", func(c *Config) { c.Loaders = -3 }},
		{"zero load", func(c *Config) { c.Load = 0 }},
		{"negative load", func(c *Config) { c.Load = -time.Second }},
		{"negative load stddev", func(c *Config) { c.LoadDist, c.LoadStddev = Normal, -1 }},
		{"zero step", func(c *Config) { c.Step = 0 }},
		{"negative step", func(c *Config) { c.Step = -ms }},
		{"negative step stddev", func(c *Config) { c.StepStddev = -ms }},
		{"zero duration", func(c *Config) { c.Duration = 0 }},
		{"negative duration", func(c *Config) { c.Duration = -time.Second }},
		{"negative prefetch", func(c *Config) { c.Prefetch = -1 }},
		{"unknown distribution", func(c *Config) { c.LoadDist = "gamma" }},
		{"stddev with constant", func(c *Config) { c.LoadDist, c.LoadStddev = Constant, ms }},
		{"too many batches", func(c *Config) { c.Step, c.Duration = time.Nanosecond, time.Hour }},
		{"too many loaders", func(c *Config) { c.Loaders, c.Prefetch = 1<<40, 1<<20 }},
		{"endless duration", func(c *Config) { c.Duration = math.MaxInt64 }},
		{"everything wrong", func(c *Config) {
			*c = Config{Loaders: -1, Load: -1, LoadDist: "?", Step: -1, Duration: -1, Prefetch: -1}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Fatalf("Validate(%+v) = nil", c)
			}
			r, err := Run(c)
			if err == nil || r != nil {
				t.Fatalf("Run(%+v) = %v, %v; want an error", c, r, err)
			}
			if !strings.HasPrefix(err.Error(), "sim: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	// Extreme but valid configurations run without overflow.
	for _, c := range []Config{
		{Loaders: 1, Load: math.MaxInt64, Step: math.MaxInt64, Duration: 1 << 62},
		{Loaders: 2, Load: time.Second, LoadDist: Normal, LoadStddev: math.MaxInt64, Step: time.Second, StepStddev: math.MaxInt64, Duration: 1 << 40},
		{Loaders: 2, Load: 1, LoadDist: LogNormal, LoadStddev: math.MaxInt64, Step: 1, Duration: 1000},
	} {
		r := run(t, c)
		if r.Batches < 0 || r.Loaded != r.Consumed+r.Queued {
			t.Errorf("%v: %+v", c, r)
		}
	}
	// Defaults: an empty distribution is constant, or normal with a
	// stddev; prefetch 0 is DefaultPrefetch.
	r := run(t, ok)
	if r.Config.LoadDist != Constant || r.Config.Prefetch != DefaultPrefetch {
		t.Errorf("defaults: %+v", r.Config)
	}
	c := ok
	c.LoadStddev = 100 * ms
	if r := run(t, c); r.Config.LoadDist != Normal {
		t.Errorf("stddev without a distribution: %q, want normal", r.Config.LoadDist)
	}
}

func TestGIF(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		c      Config
		opt    GIFOptions
		frames int
		w, h   int
	}{
		{"default", Config{Loaders: 7, Load: 2 * time.Second, Step: 100 * ms, Duration: 3 * time.Second}, GIFOptions{}, 31, 480, 200},
		{"ragged", Config{Loaders: 7, Load: 700 * ms, LoadDist: Normal, LoadStddev: 150 * ms, Step: 100 * ms, Duration: 2050 * ms, Seed: 1}, GIFOptions{}, 21, 480, 200},
		{"coarse", Config{Loaders: 3, Load: 350 * ms, Step: 100 * ms, Duration: 5 * time.Second}, GIFOptions{Tick: 250 * ms, Width: 320, Height: 120}, 21, 320, 120},
		{"many loaders", Config{Loaders: 40, Load: time.Second, Step: 10 * ms, Duration: time.Second}, GIFOptions{}, 11, 480, 200},
		{"too many to draw", Config{Loaders: 1000, Load: time.Second, Step: 10 * ms, Duration: 500 * ms}, GIFOptions{}, 6, 480, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.c)
			if n := tc.opt.Frames(tc.c.Duration); n != tc.frames {
				t.Errorf("Frames = %d, want %d", n, tc.frames)
			}
			path := filepath.Join(dir, tc.name+".gif")
			if err := r.WriteGIF(path, tc.opt); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			g, err := gif.DecodeAll(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Image) != tc.frames || g.Config.Width != tc.w || g.Config.Height != tc.h {
				t.Errorf("%d frames of %dx%d, want %d of %dx%d", len(g.Image), g.Config.Width, g.Config.Height, tc.frames, tc.w, tc.h)
			}
			for i, d := range g.Delay {
				if want := max(int(tc.opt.withDefaultsOrDie(t).Tick/(10*ms)), 1); d != want {
					t.Fatalf("frame %d delay %d, want %d", i, d, want)
				}
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	r := run(t, post(time.Second))
	if err := r.WriteGIF(filepath.Join(dir, "x.gif"), GIFOptions{MaxFrames: 10}); err == nil {
		t.Error("MaxFrames not enforced")
	}
	if err := r.WriteGIF(filepath.Join(dir, "x.gif"), GIFOptions{Width: 10, Height: 10}); err == nil {
		t.Error("tiny GIF accepted")
	}
	if err := r.WriteGIF(filepath.Join(dir, "no", "such", "dir.gif"), GIFOptions{}); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func (o GIFOptions) withDefaultsOrDie(t *testing.T) GIFOptions {
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := run(t, post(2*time.Second)).Summary(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"batches completed: 98 in 30s",
		"model idle:        67.3%",
		"mean queue length: 0.98",
		"bound by loading",
		"halts every 7 batches (14 of 14 runs; mean halt 1.3s)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestTimelineTracks(t *testing.T) {
	r := run(t, post(2*time.Second))
	tl := r.Timeline
	if len(tl.Tracks) != 8 || tl.Tracks[0] != "loader 0" || tl.Tracks[7] != ModelTrack {
		t.Fatalf("tracks %q", tl.Tracks)
	}
	steps := 0
	for _, s := range tl.Spans {
		if s.Color != s.Batch%7 {
			t.Errorf("span %+v coloured %d", s, s.Color)
		}
		if s.Track == ModelTrack {
			steps++
		}
	}
	if steps != r.Consumed {
		t.Errorf("%d model spans, %d batches consumed", steps, r.Consumed)
	}
}

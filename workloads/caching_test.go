package workloads

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/timeline"
)

// TestCaching runs document 003's composite at its quick size, with a
// smaller matrix on disk, and checks what it owns: every step's runs
// under BenchmarkLadder/step=<key>/ and step (e)'s under
// BenchmarkLadderOnDisk/, in that order; one unit of Start per Units;
// the timeline of step (a)'s first run at level none and the model's
// profiles of steps (a) and (b) in its outcome, seen by MeasureEach's
// callback as they are made; Run streams its records.
func TestCaching(t *testing.T) {
	c := QuickCaching()
	c.Workers = 2
	c.Ladder.Count = 2
	c.OnDisk.Formats, c.OnDisk.RawSizes = []string{"raw"}, []int{32}
	dev := DocumentDevice()
	dev.Step = c.Step
	env := Env{Device: Emulated(dev), Dir: t.TempDir()}
	var starts []string
	env.Start = func(name string) { starts = append(starts, name) }
	// The timeline and the profiles, as each sees them first.
	var tls []*timeline.Timeline
	var models []CachingModel
	var streamed []*benchfmt.Result
	env.Result = func(r *benchfmt.Result) error { streamed = append(streamed, r); return nil }
	o, err := c.MeasureEach(context.Background(), Env{Device: env.Device, Dir: env.Dir, Start: env.Start}, func(o CachingOutcome) error {
		if o.Timeline != nil && len(tls) == 0 {
			tls = append(tls, o.Timeline)
		}
		if o.Model != nil && len(models) == 0 {
			models = append(models, o.Model)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := CachingCodec.Encode(o)
	if o.Timeline != tls[0] || !reflect.DeepEqual(o.Model, models[0]) {
		t.Errorf("the outcome's timeline and model are not the ones each saw")
	}
	// Run streams the same records, each as the outcome holds it.
	starts = nil
	got, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || !reflect.DeepEqual(got, streamed) {
		t.Errorf("Run returned %d records, streamed %d; want %d, the same", len(got), len(streamed), len(recs))
	}

	var want []string // the records' prefixes, in order
	for _, st := range c.Steps() {
		for range c.Ladder.Count * len(st.Levels) * len(st.Placements) {
			want = append(want, "BenchmarkLadder/step="+st.Key+"/")
		}
	}
	if len(recs) <= len(want) {
		t.Fatalf("%d records, want the steps' %d and step (e)'s", len(recs), len(want))
	}
	for len(want) < len(recs) {
		want = append(want, "BenchmarkLadderOnDisk/")
	}
	for i, r := range recs {
		if !strings.HasPrefix(string(r.Name), want[i]) {
			t.Errorf("record %d: %s, want %s…", i, r.Name, want[i])
		}
	}
	if len(starts) != c.Units() {
		t.Errorf("%d units started, Units says %d: %q", len(starts), c.Units(), starts)
	}
	for _, w := range []string{"(a) naive level=none run 1/2", "(d) fast level=host placement=device run 2/2", "(model) naive profile", "(model) fast profile"} {
		if !slices.Contains(starts, w) {
			t.Errorf("no unit %q in %q", w, starts)
		}
	}
	if len(tls) != 1 || tls[0].Validate() != nil || !strings.Contains(tls[0].Name, "level none, naive transforms, 2 workers") {
		t.Errorf("timelines %v", tls)
	}
	if len(models) != 1 || len(models[0]) != 2 {
		t.Fatalf("models %v", models)
	}
	for _, st := range c.Modelled() {
		p, ok := models[0][st.Impl]
		if !ok || p.Validate() != nil || p.Workers != c.Workers {
			t.Errorf("profile of %s: %+v (found %v)", st.Impl, p, ok)
		}
	}
}

// TestCachingSettings checks the configuration block the report reads:
// step (a)'s ladder's settings, then small-raw-size, workers, count,
// step and emulated, then step (e)'s own, renamed ondisk-…, with the
// experiment's values.
func TestCachingSettings(t *testing.T) {
	c := QuickCaching()
	c.Workers = 3
	var keys []string
	got := map[string]string{}
	for _, k := range c.Settings() {
		keys = append(keys, k.Key)
		got[k.Key] = k.Value
	}
	var want []string
	for _, k := range c.Sweep(c.Steps()[0]).Settings() {
		want = append(want, k.Key)
	}
	want = append(want, "small-raw-size", "workers", "count", "step", "emulated",
		"ondisk-batch", "ondisk-steps", "ondisk-warmup", "ondisk-samples", "ondisk-count")
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	o := c.Disk()
	for key, value := range map[string]string{
		"raw-size":       fmt.Sprintf("%dx%d", c.Ladder.Pipeline.Dataset.Width, c.Ladder.Pipeline.Dataset.Height),
		"small-raw-size": fmt.Sprintf("%dx%d", c.SmallRaw, c.SmallRaw),
		"workers":        "3",
		"count":          fmt.Sprint(c.Ladder.Count),
		"step":           c.Step.String(),
		"emulated":       "true",
		"ondisk-batch":   fmt.Sprint(min(o.Ladder.Pipeline.Batch, CachingOnDiskBatch)),
		"ondisk-steps":   fmt.Sprint(o.Ladder.Train.Steps),
		"ondisk-warmup":  fmt.Sprint(o.Ladder.Train.Warmup),
	} {
		if got[key] != value {
			t.Errorf("%s = %q, want %q", key, got[key], value)
		}
	}
}

// TestCachingYardstickNotRun: where the document's code cannot run, the
// yardstick says why in its lines of the result file and adds no unit
// and no record.
func TestCachingYardstickNotRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		emulated bool
		p        peer.Peer
		why      string
	}{
		{"no script", true, peer.Peer{}, "no script"},
		{"no python", true, peer.Peer{Python: "/nonexistent/python3", Script: "x.py"}, "/nonexistent/python3"},
		{"no such script", true, peer.Peer{Python: "/bin/sh", Script: "/nonexistent/ladder.py"}, "/nonexistent/ladder.py"},
		{"a real device", false, peer.Peer{Python: "/bin/sh", Script: "x.py"}, "not the emulated one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := QuickCaching()
			c.Emulated = tc.emulated
			c.Yardstick = CachingYardstick{Peer: tc.p, Calibrate: true}
			before := c.Units()
			p := c.Prepare(context.Background())
			if !p.Yardstick.Checked || !strings.Contains(p.Yardstick.NotRun, tc.why) {
				t.Errorf("Prepare: %+v, want not run because of %q", p.Yardstick, tc.why)
			}
			if p.Units() != before {
				t.Errorf("Units %d after Prepare, %d before: the yardstick adds none when it does not run", p.Units(), before)
			}
			o, lines, err := p.runYardstick(context.Background(), Env{}, func(PeerLadderOutcome) error {
				t.Error("progress from a yardstick that does not run")
				return nil
			})
			if err != nil || len(o.Measurements) != 0 {
				t.Fatalf("%d runs, error %v", len(o.Measurements), err)
			}
			want := []resultfile.Config{{Key: KeyTorchLadder, Value: NotMeasured + p.Yardstick.NotRun}, {Key: KeyCalibration, Value: NotMeasured + "the document's code did not run"}}
			if !reflect.DeepEqual(lines, want) {
				t.Errorf("lines %q, want %q", lines, want)
			}
		})
	}
}

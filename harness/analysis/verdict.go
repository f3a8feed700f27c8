package analysis

import (
	"fmt"
	"io"
	"time"

	"github.com/headspace-bench/headspace/harness/pipeline"
)

// Class is how input-bound a run is, by TensorFlow's input-pipeline
// analyzer's thresholds on the share of step time spent waiting for input.
type Class string

// The three classes.
const (
	NotInputBound        Class = "not input-bound"
	ModeratelyInputBound Class = "moderately input-bound"
	HighlyInputBound     Class = "highly input-bound"
)

// Classify maps the share of step time spent waiting for input (0..1) to
// its class: under 5%, 5–20%, over 20%.
func Classify(share float64) Class {
	switch {
	case share > 0.20:
		return HighlyInputBound
	case share >= 0.05:
		return ModeratelyInputBound
	}
	return NotInputBound
}

// OccupancyDrop is how far a queue's occupancy must fall below the one
// before it for the stage between them to be named the bottleneck.
const OccupancyDrop = 0.25

// Verdict says how input-bound a run is and which stage bounds it.
type Verdict struct {
	Class Class
	Wait  time.Duration // time the training loop waited for input
	Wall  time.Duration // the loop's time over the same steps
	Share float64       // Wait / Wall
	// Stage is the stage that bounds throughput: a pipeline stage, or
	// "model step" when every queue stays full.
	Stage string
	// Reason gives the occupancies the stage was read from.
	Reason string
	// Busiest is the stage whose workers spent the largest share of the
	// pipeline's summed task time, and Busy that share: a second reading
	// for pipelines whose stages share the same few cores.
	Busiest string
	Busy    float64
	Stats   pipeline.Stats
}

// Judge reads the verdict from a pipeline's statistics and the training
// loop's input wait over wall time. A loop that hardly waits (not
// input-bound) is bounded by the model step, whatever the queues say.
// Otherwise queues are read from the first stage after the source to the
// sink: the first whose occupancy falls by OccupancyDrop or more below the
// queue before it (or below 50% when it is the first) is the output of the
// bottleneck stage. If none falls, the consumer (the model step) is what
// the pipeline waits on.
func Judge(st pipeline.Stats, wait, wall time.Duration) Verdict {
	v := Verdict{Wait: wait, Wall: wall, Stats: st}
	if wall > 0 {
		v.Share = float64(wait) / float64(wall)
	}
	v.Class = Classify(v.Share)
	var sum time.Duration
	for _, s := range st.Stages {
		sum += s.Total
	}
	for _, s := range st.Stages {
		if sum > 0 && float64(s.Total)/float64(sum) > v.Busy {
			v.Busiest, v.Busy = s.Name, float64(s.Total)/float64(sum)
		}
	}
	if v.Class == NotInputBound {
		v.Stage = "model step"
		v.Reason = fmt.Sprintf("the training loop waited for input only %.1f%% of the time", 100*v.Share)
		return v
	}
	// The source (queue 0) only numbers the items; its queue empties when
	// the pipeline's window holds it back, so reading starts after it.
	prev := 1.0
	for i := 1; i < len(st.Queues); i++ {
		q := st.Queues[i]
		if q.Occupancy < prev-OccupancyDrop || (i == 1 && q.Occupancy < 0.5) {
			v.Stage = st.Stages[i].Name
			if i == 1 {
				v.Reason = fmt.Sprintf("the %s queue is ready only %.0f%% of the time", q.Name, 100*q.Occupancy)
			} else {
				v.Reason = fmt.Sprintf("occupancy falls from %.0f%% after %s to %.0f%% after %s",
					100*prev, st.Queues[i-1].Name, 100*q.Occupancy, q.Name)
			}
			return v
		}
		prev = q.Occupancy
	}
	v.Stage = "model step"
	if len(st.Queues) > 0 {
		v.Reason = fmt.Sprintf("every queue stays ready (the last, %s, %.0f%% of the time): the pipeline waits on its consumer", st.Queues[len(st.Queues)-1].Name, 100*prev)
	}
	return v
}

// WriteText prints the verdict with the numbers it rests on, and the
// stage statistics in SPDL's words.
func (v Verdict) WriteText(w io.Writer) {
	fmt.Fprintf(w, "verdict: %s — input wait %s of %s (%.1f%% of step time; <5%% not, 5–20%% moderately, >20%% highly input-bound)\n",
		v.Class, v.Wait.Round(time.Millisecond), v.Wall.Round(time.Millisecond), 100*v.Share)
	fmt.Fprintf(w, "bounding stage: %s — %s\n", v.Stage, v.Reason)
	if v.Busiest != "" {
		fmt.Fprintf(w, "busiest stage: %s — %.0f%% of all task time in the pipeline\n", v.Busiest, 100*v.Busy)
	}
	fmt.Fprintln(w)
	WriteStats(w, v.Stats)
}

// WriteStats prints one line per stage and per queue, in SPDL's words.
func WriteStats(w io.Writer, st pipeline.Stats) {
	for i, s := range st.Stages {
		fmt.Fprintf(w, "[%-9s] Completed %d tasks (%d failed). Ave task time: %s, P90: %s, P99: %s (%d workers)\n",
			s.Name, s.Tasks, s.Failures, dur(s.Average), dur(s.P90), dur(s.P99), s.Workers)
		if i < len(st.Queues) {
			q := st.Queues[i]
			fmt.Fprintf(w, "[%-9s] Processed %d items in %s (QPS %.1f). Ave wait time: put %s, get %s. Occupancy rate %.0f%%\n",
				q.Name, q.Items, q.Elapsed.Round(time.Millisecond), q.QPS(), dur(q.AvgPutWait), dur(q.AvgGetWait), 100*q.Occupancy)
		}
	}
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	}
}

package whatif

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/level"
)

// LadderStage is the caching ladder's name for a pipeline stage ("load" is
// "raw data loading"), or the stage's own name where the ladder has none
// (level.Attributed).
func LadderStage(stage string) string { return level.Attributed(level.Stage(stage)) }

// AtLevel is the profile with what the ladder's level caches costing
// nothing: every stage the level no longer runs (level.Level.Runs), the
// host's own CPU where no loader runs, the copy where it no longer runs.
func (p Profile) AtLevel(l level.Level) Profile {
	q := p
	q.Stages = slices.Clone(p.Stages)
	for i := range q.Stages {
		s := &q.Stages[i]
		if !l.Runs(level.Stage(s.Name)) {
			s.CPU, s.Wait = 0, 0
		}
	}
	if !l.Loader() {
		q.Host = 0
	}
	if !l.Runs(level.Upload) {
		q.Upload = 0
	}
	return q
}

// Ladder is the model's prediction of the caching ladder at s: steps/s at
// each of the document's levels (level.Document).
func (p Profile) Ladder(s Scenario) map[level.Level]float64 {
	out := map[level.Level]float64{}
	for _, l := range level.Document {
		out[l] = p.AtLevel(l).Predict(s).StepsPerSec
	}
	return out
}

// Blame is the model's reading of what is in the way at s: the ladder's
// name of the stage whose cost must go first. The binding resource says
// which: the step ("model step"), the copy ("host-to-device transfer"), a
// stage's workers (that stage), or the cores — then the stage that needs
// the smallest speed-up alone, the one holding the largest share of them.
func (p Profile) Blame(s Scenario) string {
	pr := p.Predict(s)
	switch pr.Bound.Kind {
	case StepBound:
		return level.Device.Stage()
	case CopyBound:
		return level.Host.Stage()
	case WorkersBound:
		return LadderStage(pr.Bound.Stage)
	}
	best, speed := "", math.Inf(1)
	for _, n := range p.Needs(s) {
		if n.Speedup < speed || best == "" && n.Share > 0 {
			best, speed = n.Stage, n.Speedup
		}
	}
	if best == "" {
		return "host"
	}
	return LadderStage(best)
}

// Comparison sets the ladder's attribution beside the model's, both read
// from the model's costs at one scenario.
type Comparison struct {
	Ladder ladder.Attribution // ladder.Attribute of the predicted levels
	Model  string             // Blame
	Bound  Limit              // the model's binding resource
}

// Compare predicts the ladder at s and reads it with ladder.Attribute,
// beside the model's Blame.
func (p Profile) Compare(s Scenario) Comparison {
	return Comparison{Ladder: ladder.Attribute(p.Ladder(s)), Model: p.Blame(s), Bound: p.Predict(s).Bound}
}

// LadderBlames is the stage the ladder blames: the bottleneck drop's
// stages, or "model step" when no drop is significant.
func (c Comparison) LadderBlames() string {
	if c.Ladder.Bottleneck == nil {
		return level.Device.Stage()
	}
	return c.Ladder.Bottleneck.Stages()
}

// Agree says whether the ladder's bottleneck includes the model's stage.
func (c Comparison) Agree() bool {
	return strings.Contains(c.LadderBlames(), c.Model)
}

func (c Comparison) String() string {
	if c.Agree() {
		return fmt.Sprintf("the ladder and the model agree: %s", c.Model)
	}
	return fmt.Sprintf("the ladder blames %s, the model %s: %s", c.LadderBlames(), c.Model, c.Reason())
}

// Reason says why the two differ, or "" where they agree.
func (c Comparison) Reason() string {
	switch {
	case c.Agree():
		return ""
	case c.Bound.Kind == CoresBound && c.Ladder.Bottleneck == nil:
		return fmt.Sprintf("no level's drop reaches %.0f%%, yet the cores bind, and %s holds the largest share of them", 100*ladder.Significant, c.Model)
	case c.Bound.Kind == CoresBound:
		return fmt.Sprintf("the cores bind, %s holds the largest share of them, and %s only tips them over", c.Model, c.LadderBlames())
	}
	return fmt.Sprintf("the model's binding resource is the %s", c.Bound)
}

package workloads

import (
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/timeline"
)

// Details are the typed hooks through which an experiment passes what it
// measured beside its records, as it is made: what a command prints or
// draws that the records do not hold (a ladder point's run, a Caching's
// timeline). A Typed experiment (Sim, Loaders, Headspace, Node,
// CUDACheck, CUDADecode, Peer, PeerLadder, OnDisk, WhatIf; typed.go) has
// none: what it measured is the value its Measure returns; the others
// use these hooks until they are converted. Each field is one type, its
// comment naming the experiment that sends it, so which types an
// experiment sends is in the code, and the compiler checks the type of
// every hook a caller sets (an any-typed hook let a subscriber of the
// wrong type wait, silently, for nothing). A field left nil is not
// called; the zero Details listens to nothing.
type Details struct {
	// Point receives each run of a Ladder's point, after its record.
	Point func(PointRun)

	// Timeline receives the timeline of a Caching's first run of step
	// (a) at level none, after that run.
	Timeline func(*timeline.Timeline)
	// Model receives a Caching's what-if profiles, after its ladder.
	Model func(CachingModel)
	// YardstickSoFar receives the outcome so far of a Caching's
	// yardstick (a PeerLadder of the document's code): its calibration,
	// if it calibrates, before its first run (no runs yet), then, after
	// each run, its runs so far (the calibration with them).
	YardstickSoFar func(PeerLadderOutcome)
	// Yardstick receives a Caching's lines of the result file about its
	// yardstick (whether it ran and why not, its calibration, the
	// script's command line and versions), at its end.
	Yardstick func([]resultfile.Config)
}

// send calls f with v if f is set: how an experiment passes a detail.
func send[T any](f func(T), v T) {
	if f != nil {
		f(v)
	}
}

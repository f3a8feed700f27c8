package workloads

import "github.com/headspace-bench/headspace/harness/whatif"

// Details are the typed hooks through which an experiment passes what it
// measured beside its records, as it is made: what a command prints or
// draws that the records do not hold (the what-if model's profile, its
// checks). A Typed experiment (Sim, Loaders, Headspace, Node, CUDACheck,
// CUDADecode, Peer, PeerLadder, OnDisk, Ladder, Caching, Remote;
// typed.go) has none: what it measured is the value its Measure returns;
// WhatIf uses these hooks until it is converted. Each field is one type,
// its comment naming the experiment that sends it, so which types an
// experiment sends is in the code, and the compiler checks the type of
// every hook a caller sets (an any-typed hook let a subscriber of the
// wrong type wait, silently, for nothing). A field left nil is not
// called; the zero Details listens to nothing.
type Details struct {
	// Profile receives a WhatIf run's profile first, before its
	// predictions are checked.
	Profile func(whatif.Profile)
	// WhatIfLadder receives the medians of a WhatIf's caching ladder at
	// the profile's setting (WhatIf.WithLadder).
	WhatIfLadder func(WhatIfLadder)
	// Checks receives a WhatIf's verification checks, after its runs.
	Checks func([]whatif.Check)
}

// send calls f with v if f is set: how an experiment passes a detail.
func send[T any](f func(T), v T) {
	if f != nil {
		f(v)
	}
}

// Package inject adds a calibrated slowdown to one level of the ladder,
// for measuring the regression gate's power on real runs (ci/aa.sh's
// A/B sessions). It does nothing unless the binary is built with the
// build tag headspace_inject, which no default build, make target or
// release sets: the product's path never slows down.
//
// Built with the tag, HEADSPACE_INJECT="LEVEL=SHARE" (for example
// "raw=0.10") makes every run of that level burn SHARE times the run's
// own CPU time more, on one thread, inside its measured time: its CPU
// time per step grows by SHARE, its wall time by the burn's duration.
package inject

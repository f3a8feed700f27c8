// Package tune finds the DataLoader settings of a user's training
// script that make it fastest, and proves them: headspace tune.
//
// The search is guided by the what-if model of the script's loader
// (ownloop.WhatIf, from one analysis run), not a blind grid. It runs
// short runs of the script under the hook, which applies each
// candidate's num_workers, prefetch_factor, pin_memory,
// persistent_workers and start method to the training loader (the
// script is not edited), the candidates of a stage alternated round by
// round:
//
//  1. workers: the model's pick (the fewest workers its prediction puts
//     within 3% of its best), its neighbours on the worker ladder (0, 1,
//     2, 3, 4, 6, 8, 12, 16, …; the script's own only where it is one
//     of them: the profile and the final check measure it); then, while the
//     best is at an end and beats the rest, the next count beyond it;
//  2. the loader: at the best worker count, persistent workers, twice
//     the prefetch, pinned memory (with CUDA) and fork (where the
//     script's loader does not fork and the platform can), each against
//     the best so far; those that beat it together, once more.
//
// A candidate whose run fails (too many workers for memory, a start
// method the script cannot take) is recorded as failed with its reason
// and left out; the search goes on (where every candidate of a first
// stage failed, down the ladder from the lowest tried, a value a stage,
// until one runs); so is a run still going at three
// times its expected time and 10 s (DefaultLimit). Each run's cost is estimated before
// it starts (its measured wall time, or the profile's start-up and the
// model's rate) and no round starts that the budget cannot hold beside
// the final check. The final check is a paired run of the script's own
// settings and the best, alternated: a setting that measures slower
// than the script's own there is never recommended.
package tune

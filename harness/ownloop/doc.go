// Package ownloop runs a user's own, unmodified PyTorch training command
// under headspace's hook and turns what the hook measured into the
// headspace analysis and the caching ladder of that script.
//
// # The hook
//
// headspace_hook.py is a stdlib-only Python module embedded in the binary
// (Source). Exec writes it to a temporary directory, removed once the
// interpreter has loaded it (at the end of the run at the latest),
// and runs the command's interpreter as `python -m cProfile` would run a
// profiler: `INTERPRETER [OPTIONS] -m headspace_hook SCRIPT ARGS…` with
// that directory on PYTHONPATH. Nothing is written into the user's tree.
// The hook wraps the training torch.utils.data.DataLoader (the first one
// iterated in the main thread, or the Settings.Loader-th; one made anew at
// the same place each epoch is the same; one whose steps train nothing
// gives way to one whose steps run a backward pass) in SPDL's cache
// iterator, times every step from one batch request to the next and the
// loop's wait inside each request, times each sample's __getitem__ in the
// workers (split into .loader and .transform for torchvision-style
// datasets), the collate of each batch, pin-memory and the workers' CPU
// time, and writes one JSON event a line to a pipe (file descriptor 3,
// which the hook moves to a high number before the script starts).
// The other DataLoaders of the training loader's CombinedLoader
// (Lightning's, or any object that holds them in a list named iterables
// and calls iter() on each) are measured with it: kept and replayed from
// the same step, their waits in the step's (Run.Members). An iterable
// the script gives to headspace_hook.wrap() is the training loop without
// a DataLoader: its steps are timed and cached, its stages are not.
// Once it has the steps it needs it says "done" and Exec kills the
// command's process group, and on Linux its PID namespace
// (procgroup.Contained): the script and everything it started.
//
// # Ranks
//
// A command whose ranks are processes — torchrun's, or those the script
// starts with torch.multiprocessing.spawn — has the hook in every rank
// (ranks.go): each rank's events are tagged with its number and go to a
// FIFO the ranks open by its path, each rank wraps its own training
// loader with the same settings, so all switch to cached batches at the
// same step (fixed up front: their collectives stay in lockstep), and
// Exec ends the run when every rank has its steps. AnalyzeRanks analyses
// each rank and the node: the slowest rank and the spread, the verdict
// and the stage in the way (the slowest rank's), and what it would take
// from the node model of whatif --accelerators (node.Profile).
//
// # Faults
//
// ParseCommand refuses, with one line (ErrRefused), a command that does
// not exist, is not a Python interpreter, runs a launcher other than
// torchrun (or python -m torch.distributed.run), ranks on more than one
// node, or passes code with -c. Exec returns ErrRefused for what the
// hook refuses (torch missing, WORLD_SIZE without a launcher, a world
// larger than the node's ranks, a level the dataset cannot take),
// *RanksFailed for a rank that raises, *RanksHung for ranks that make no
// step for Settings.FirstBatchTimeout (ranks.go), ErrNoLoader when no
// DataLoader is iterated within Settings.FirstBatchTimeout or before the
// script ends, ErrStalled when the loop asks for no batch within
// Settings.StallTimeout, *EndedEarly when
// the script ends before the steps the run needs, *ScriptFailed when it
// exits with an error (its traceback went to the command's stderr), and
// the context's error when it is cancelled (SIGINT): the process group is
// killed at once.
//
// # Estimates
//
// A DataLoader with W workers delivers its batches in bursts: the gaps
// between batches alternate (53 ms and 14 ms with 2 workers each taking
// 67 ms a batch), so the median of single steps can land on either. The
// analysis estimates the step time over whole rounds of the workers: the
// mean of each run of W consecutive steps, then the median of those means
// with its 95% confidence interval (analysis.RoundEstimate).
package ownloop

package ownloop

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoLoader is wrapped when the script iterates no DataLoader: within
// Settings.FirstBatchTimeout, or before it ends.
var ErrNoLoader = errors.New("no DataLoader iterated")

// EndedEarly is a script that ended, without an error, before the steps
// the run needs. Run holds what it got.
type EndedEarly struct {
	Got, Want int
	Run       *Run
}

func (e *EndedEarly) Error() string {
	return fmt.Sprintf("the script ended after %d of the %d steps this run needs: train longer (more epochs or samples) or ask for fewer steps", e.Got, e.Want)
}

// ScriptFailed is a script that exited with an error before the run had
// its steps; its traceback went to the command's stderr.
type ScriptFailed struct {
	Status string // the exit status, as the os/exec error says it
	Steps  int    // steps measured before
}

func (e *ScriptFailed) Error() string {
	return fmt.Sprintf("the script failed (%s) after %d steps: its traceback is above", e.Status, e.Steps)
}

// ErrStalled is wrapped when the training loop asks for no batch within
// Settings.StallTimeout after its first.
var ErrStalled = errors.New("the training loop stalled")

// noLoader is why no first batch came: within the first-batch timeout
// (timeout), or before the script ended. It names what the hook saw:
// the training loader iterated but slow to start, the loaders there were
// where --loader asks for one more, or a DataLoader in another thread.
func noLoader(r *Run, s Settings, timeout bool) error {
	when := "before the script ended"
	if timeout {
		when = fmt.Sprintf("within --first-batch-timeout %v", s.FirstBatchTimeout)
	}
	if ld, ok := r.Target(); ok {
		return fmt.Errorf("%w: the training loader %s was iterated, but its first batch did not come %s: a loader that starts slowly needs a longer --first-batch-timeout", ErrNoLoader, ld, when)
	}
	if len(r.Loaders) > 0 && s.Loader > len(r.Loaders) {
		return fmt.Errorf("%w: --loader %d, but the script iterated %d DataLoader(s) in its main thread %s: %s", ErrNoLoader, s.Loader, len(r.Loaders), when, loaderList(r.Loaders))
	}
	if r.Thread != "" {
		return fmt.Errorf("%w in the main thread %s: the script iterated one (made at %s) in its thread %q; headspace measures a training loop that runs in the main thread (or one given to headspace_hook.wrap)", ErrNoLoader, when, r.ThreadSite, r.Thread)
	}
	if !timeout {
		return fmt.Errorf("%w: the script ended without iterating a torch.utils.data.DataLoader (or headspace_hook.wrap) in its main thread", ErrNoLoader)
	}
	return fmt.Errorf("%w %s: the script must iterate a torch.utils.data.DataLoader (or headspace_hook.wrap) in its main thread", ErrNoLoader, when)
}

// stalled is the line that names a training loop that asked for no batch
// within s.StallTimeout, and the loaders that delivered meanwhile.
func stalled(r *Run, s Settings) error {
	ld, _ := r.Target()
	msg := fmt.Sprintf("loader %s asked for no batch for --stall-timeout %v after %d steps", ld, s.StallTimeout, len(r.Steps))
	var busy []string
	for _, l := range r.Loaders {
		if o := r.Others[l.Index]; o != nil && o.pending > 0 {
			busy = append(busy, fmt.Sprintf("%s delivered %d batches", l, o.pending))
		}
	}
	if len(busy) == 0 {
		return fmt.Errorf("%w: %s, and no other loader delivered a batch meanwhile: the script is stuck in its step (or between its epochs)", ErrStalled, msg)
	}
	return fmt.Errorf("%w: %s, while %s: if that is the training loop, run again with --loader N (or a longer --stall-timeout for a long validation pass)", ErrStalled, msg, strings.Join(busy, "; "))
}

// loaderList names loaders as the report does, separated by commas.
func loaderList(ls []Loader) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.String())
	}
	return strings.Join(out, ", ")
}

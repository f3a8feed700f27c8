package ownloop

import (
	"errors"
	"fmt"
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

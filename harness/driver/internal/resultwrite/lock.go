package resultwrite

import (
	"errors"
	"fmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// refused is an resultfile.ErrRefused error: "results: " and the formatted message.
func refused(format string, args ...any) error {
	return atomicfile.Refusef("results: "+format, args...)
}

// lockFor takes the write lock of target (atomicfile's one writer lock),
// or says which process holds it.
func lockFor(target string) (*atomicfile.Lock, error) {
	l, err := atomicfile.TryLock(target)
	var held *atomicfile.HeldError
	switch {
	case errors.As(err, &held):
		return nil, refused("%s is being written by another run (process %s); one writer per results file: wait for it, or write to another --out", target, held.PID)
	case errors.Is(err, resultfile.ErrRefused):
		return nil, refused("%v", err)
	case err != nil:
		return nil, fmt.Errorf("results: %w", err)
	}
	return l, nil
}

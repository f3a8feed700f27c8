package cli

import (
	"bytes"
	"fmt"
	"runtime/pprof"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// StartCPUProfile starts a CPU profile of this process when path is set and
// returns the function that stops it and writes it to path atomically (a run
// that fails or is killed leaves no half profile). The pipeline labels every
// sample with its stage, so `go tool pprof -tags` splits the time by stage.
// Process workers are other processes and are not in it.
//
// stop's partial says the run did not finish: a profile already at path
// is then kept and this one written beside it (atomicfile.PartialPath).
func StartCPUProfile(path string) (stop func(partial bool) error, err error) {
	if path == "" {
		return func(bool) error { return nil }, nil
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func(partial bool) error {
		pprof.StopCPUProfile()
		if partial {
			path = atomicfile.PartialPath(path)
		}
		if err := atomicfile.WriteKindBytes(path, atomicfile.Profile, buf.Bytes()); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}

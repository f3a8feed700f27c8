package main

import (
	"github.com/headspace-bench/headspace/harness/blocks/results"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// checkOutputs checks, before anything is measured, that every output the
// flags name can be written (atomicfile.Check: the directory exists and
// takes files, the path is no directory); a prefix flag passes one of the
// files it makes. Empty paths are skipped. The first problem is a usage
// error naming the path.
func checkOutputs(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := atomicfile.Check(p); err != nil {
			return usageError{err.Error()}
		}
	}
	return nil
}

// checkResultsOut checks a results file to be written whole (analyze,
// loaders, peer, whatif --out): writable, and if it exists, a results file
// that no other run is writing (results.WriteFile's rules, checked before
// the run rather than after it).
func checkResultsOut(path string) error {
	if path == "" {
		return nil
	}
	if err := checkOutputs(path); err != nil {
		return err
	}
	f, err := results.OpenFresh(path, nil)
	if err != nil {
		return err
	}
	return f.Close()
}

// prefixed is prefix+suffix, or "" without a prefix.
func prefixed(prefix, suffix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + suffix
}

package gate

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCompareFiles feeds arbitrary bytes to the gate, split at the first
// "--\n" into the old and the new file (both the whole input when there
// is none). It must never panic or hang: CompareFiles returns an error or
// a report that prints, and Evidence judges it either way.
//
// The seeds are small on purpose: the fuzzer minimizes every new
// interesting input, and minimizing a 2 KB file takes it longer than the
// whole run (17 executions in 15 s with the golden files as seeds); with
// these it makes thousands a second. The files are written once per
// worker into one directory, not a new one per execution.
func FuzzCompareFiles(f *testing.F) {
	seeds := []string{
		"cpu: X\ncores: 2\ndevice: emulated\n\nBenchmarkA-2 1 10 ns/op 5 steps/s\nBenchmarkA-2 1 11 ns/op 5 steps/s\n--\ncpu: X\ncores: 2\ndevice: emulated\n\nBenchmarkA-2 1 20 ns/op 2 steps/s\nBenchmarkA-2 1 21 ns/op 2 steps/s\n",
		"Unit steps/s better=lower\ncpu: X\ncores: 2\nBenchmarkA 1 1 steps/s\n--\nUnit steps/s better=higher\nBenchmarkA 1 2 steps/s\n",
		"Unit ns/op better=higher\nUnit ns/op better=lower\nBenchmarkA 1 NaN ns/op +Inf ns/op\n",
		"cpu: A\nBenchmarkB/x=1 4 1 ns/op\nBenchmarkB/x=1 4 2 ns/op\nBenchmarkB/x=1 4 3 ns/op\nBenchmarkB/x=1 4 4 ns/op\n--\ncpu: B\nBenchmarkB/x=1 4 9 ns/op\n",
		"\xef\xbb\xbf",
		"",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	dir, err := os.MkdirTemp("", "fuzzcompare")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	oldPath, newPath := filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		o, n, ok := bytes.Cut(data, []byte("--\n"))
		if !ok {
			n = o
		}
		if err := os.WriteFile(oldPath, o, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(newPath, n, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := CompareFiles(oldPath, newPath, DefaultOptions())
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := rep.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		_ = rep.Evidence(DefaultMinCoverage)
	})
}

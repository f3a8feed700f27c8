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

// FuzzReadCanaries feeds arbitrary bytes to ReadCanaries as a
// sessions.tsv and as a result file. It must never panic: it returns
// canaries whose outcomes are consistent, or an error of one line.
func FuzzReadCanaries(f *testing.F) {
	for _, s := range []string{
		"session\tslowdown\tpaired_exit\tnot_sure\n1\taa\t0\t0\n2\t0.10\t3\t1\n",
		"session\tslowdown\tpaired_exit\n1\tNaN\t1\n",
		"commit: a\n\nBenchmarkGateCanary/slowdown=0.1 1 1 failed 0 rerun 0 not-sure 16 rounds\n",
		"commit: a\n\nBenchmarkGateCanary/slowdown=0 1 NaN failed 0 rerun\n",
		"",
	} {
		f.Add([]byte(s))
	}
	dir, err := os.MkdirTemp("", "fuzzcanaries")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"sessions.tsv", "night.txt"} {
			sub := filepath.Join(dir, name+".d")
			os.RemoveAll(sub)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			cs, err := ReadCanaries(sub, sub)
			if err != nil {
				if bytes.Contains([]byte(err.Error()), []byte("\n")) {
					t.Errorf("%s: error of more than one line: %q", name, err)
				}
				continue
			}
			for _, c := range cs {
				if c.Failed && c.Rerun || c.NotSure && !c.Rerun || !(c.Slowdown >= 0) {
					t.Errorf("%s: inconsistent canary %+v", name, c)
				}
			}
			if err := WriteCanaryText(io.Discard, cs); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
}

package gate

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCompareFiles feeds arbitrary bytes to both sides of the gate. It
// must never panic or hang: CompareFiles returns an error or a report
// that prints, and Evidence judges it either way.
func FuzzCompareFiles(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "gate", "*", "*.txt"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("\xef\xbb\xbf"))
	f.Add([]byte("Unit ns/op better=higher\nUnit ns/op better=lower\nBenchmarkA 1 NaN ns/op +Inf ns/op\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "r.txt")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := CompareFiles(path, path, DefaultOptions())
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

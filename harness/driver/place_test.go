package driver_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestPlace: Place writes a result file's bytes as they are, with the
// permission asked, never over a file already there (fs.ErrExist, the
// first file kept), and refuses bytes that are no result file
// (ErrRefused); no temporary file stays behind.
func TestPlace(t *testing.T) {
	dir := t.TempDir()
	good := []byte("goos: linux\n\nBenchmarkA 1 5 ns/op\n")
	target := filepath.Join(dir, "a.txt")
	for _, tc := range []struct {
		name   string
		target string
		data   []byte
		want   error
	}{
		{"new", target, good, nil},
		{"again", target, []byte("goos: darwin\n\nBenchmarkB 1 6 ns/op\n"), fs.ErrExist},
		{"not results", filepath.Join(dir, "b.txt"), []byte("hello\n"), resultfile.ErrRefused},
		{"no results", filepath.Join(dir, "c.txt"), []byte("goos: linux\n"), resultfile.ErrRefused},
	} {
		err := driver.Place(tc.target, tc.data, 0o444)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != string(good) {
		t.Errorf("%s holds %q, %v; want the first bytes placed", target, got, err)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o444 {
		t.Errorf("%s: mode %v, %v; want 0444", target, st.Mode().Perm(), err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("the folder holds %v; want a.txt alone", names)
	}
}

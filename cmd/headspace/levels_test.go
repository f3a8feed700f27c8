package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateLevels = flag.Bool("update-levels", false, "rewrite testdata/levels.golden*")

// TestLevels checks `headspace levels` and `headspace levels --json`
// against their golden files: the table a level's row changes, and the
// JSON the peer scripts and reports read.
func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"levels"}, "levels.golden"},
		{[]string{"levels", "--json"}, "levels.golden.json"},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		path := filepath.Join("testdata", tc.golden)
		if *updateLevels {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run Levels -update-levels writes it)", err)
		}
		if out != string(want) {
			t.Errorf("%v differs from %s (go test -run Levels -update-levels rewrites it):\n%s", tc.args, path, out)
		}
	}
	if code, _, errOut := runCLI("levels", "extra"); code != 2 || errOut != "headspace levels: unexpected argument \"extra\"\n" {
		t.Errorf("levels extra: exit %d, %q", code, errOut)
	}
}

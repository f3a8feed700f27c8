package reproduce

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is the module whose root holds the committed notebooks.
const modulePath = "github.com/headspace-bench/headspace"

// repoRoot finds the repository's root: the nearest directory at or above
// the test's working directory whose go.mod declares modulePath. It does
// not depend on where this package sits in the tree, so the test keeps
// working when the package moves.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if module, err := moduleOf(filepath.Join(dir, "go.mod")); err == nil && module == modulePath {
			return dir
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of module %s at or above the working directory", modulePath)
		}
		dir = parent
	}
}

// moduleOf returns the module path a go.mod declares.
func moduleOf(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", s.Err()
}

// TestCommittedReportsMatchTheirResults rebuilds every document's report
// from the committed saved measurements (notebooks/results), as
// `headspace reproduce --from notebooks/results` does, and fails on any
// difference from the committed notebooks/<id>-<name>.md and from the
// committed figures the rebuild draws. A figure in a committed report
// that no committed result file backs, or a report edited by hand, shows
// here; to change a report, change its renderer or its result file and
// rebuild it with --from.
func TestCommittedReportsMatchTheirResults(t *testing.T) {
	root := repoRoot(t)
	notebooks := filepath.Join(root, "notebooks")
	out := t.TempDir()
	paths, err := Run(context.Background(), nil, Options{From: filepath.Join(notebooks, "results"), Out: out})
	if err != nil {
		t.Fatalf("rebuilding from notebooks/results: %v", err)
	}
	if len(paths) != len(Docs) {
		t.Fatalf("rebuilt %d reports %v, want one per document (%d)", len(paths), paths, len(Docs))
	}

	rebuilt := files(t, out)
	compared := 0
	for name, want := range rebuilt {
		if strings.HasPrefix(name, "results/") {
			continue // the saved files themselves, copied over
		}
		compared++
		got, err := os.ReadFile(filepath.Join(notebooks, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("notebooks/%s: the rebuild writes it, but it is not committed: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("notebooks/%s differs from its rebuild from notebooks/results%s\n"+
				"(regenerate it: headspace reproduce --from notebooks/results --out notebooks)",
				name, firstDifference(name, got, want))
		}
	}
	for _, d := range Docs {
		name := d.ID + "-" + d.Name + ".md"
		if _, ok := rebuilt[name]; !ok {
			t.Errorf("the rebuild wrote no %s", name)
		}
	}
	if compared < 2*len(Docs) {
		t.Errorf("compared %d reports and figures, want at least a report and a figure per document", compared)
	}
}

// firstDifference describes where committed and rebuilt first differ, for
// the failure message: the line, for a report; the sizes, for a figure.
func firstDifference(name string, committed, rebuilt []byte) string {
	if !strings.HasSuffix(name, ".md") {
		return fmt.Sprintf(" (%d bytes committed, %d rebuilt)", len(committed), len(rebuilt))
	}
	c := strings.Split(string(committed), "\n")
	r := strings.Split(string(rebuilt), "\n")
	for i := 0; i < max(len(c), len(r)); i++ {
		if i >= len(c) || i >= len(r) || c[i] != r[i] {
			line := func(l []string) string {
				if i >= len(l) {
					return "(end of file)"
				}
				if s := l[i]; len(s) > 200 {
					return s[:200] + "…"
				}
				return l[i]
			}
			return fmt.Sprintf("; first at line %d:\n  committed: %s\n  rebuilt:   %s", i+1, line(c), line(r))
		}
	}
	return ""
}

package cli_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestInternalIsGroundFloor checks docs/design.md's layering: internal/
// is the ground floor, so no package under it imports a package of this
// module outside internal/ (harness, datasets, history, workloads, the
// command layer…). Every internal package is listed, so one that reaches
// an upper package through another internal one fails through that one.
func TestInternalIsGroundFloor(t *testing.T) {
	mod := goList(t, "-m", "-f", "{{.Path}}")
	out := goList(t, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", mod+"/internal/...")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 5 {
		t.Fatalf("go list found %d internal packages: %q", len(lines), out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		for _, dep := range f[1:] {
			if (dep == mod || strings.HasPrefix(dep, mod+"/")) && !strings.HasPrefix(dep, mod+"/internal/") {
				t.Errorf("%s imports %s, a package above internal/", f[0], dep)
			}
		}
	}
}

// goList runs go list with args in this module and returns its output.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v %s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out))
}

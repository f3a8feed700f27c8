package realpeer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestEnvStatusScript runs peers/envstatus.py (stdlib only) with Debian's
// python3, which `make test` gives PIL (python3-pil): a pin that imports
// is recorded with its version, one whose install failed with pip's first
// ERROR line, and the file reads back as a Status.
func TestEnvStatusScript(t *testing.T) {
	dir := t.TempDir()
	req := filepath.Join(dir, "requirements.txt")
	if err := os.WriteFile(req, []byte("# pins\npillow==9.4.0\nnot-a-real-package==1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "not-a-real-package.log"), []byte("Collecting not-a-real-package==1.0\n"+
		"ERROR: Could not find a version that satisfies the requirement not-a-real-package==1.0 (from versions: none)\n"+
		"ERROR: No matching distribution found for not-a-real-package==1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", filepath.Join("..", "..", "peers", "envstatus.py"), req, logs).Output()
	if err != nil {
		t.Fatalf("envstatus.py: %v", err)
	}
	var st Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("envstatus.py printed %s: %v", out, err)
	}
	if len(st.Packages) != 2 || st.Python == "" {
		t.Fatalf("status %+v, want two packages and the python", st)
	}
	pil, fake := st.Packages[0], st.Packages[1]
	if !pil.OK || pil.Version == "" || pil.Import != "PIL.Image" || pil.Pin != "9.4.0" {
		t.Errorf("pillow: %+v, want it imported, with its version", pil)
	}
	if want := "not installed: ERROR: Could not find a version that satisfies the requirement not-a-real-package==1.0 (from versions: none)"; fake.OK || fake.Reason != want {
		t.Errorf("not-a-real-package: %+v, want reason %q", fake, want)
	}
}

package realpeer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStatusUnavailable(t *testing.T) {
	env := t.TempDir()
	py := filepath.Join(env, "bin", "python")
	if _, ok, err := ReadStatus(py); ok || err != nil {
		t.Fatalf("ReadStatus of an env without a status file: ok %v, err %v; want neither", ok, err)
	}
	if err := os.WriteFile(filepath.Join(env, StatusFile), []byte(`{"python": "3.11.7", "packages": [
 {"package": "torch", "import": "torch", "pin": "2.11.0", "version": "2.11.0", "ok": true, "reason": ""},
 {"package": "torchvision", "import": "torchvision", "pin": "0.26.0", "version": "0.26.0", "ok": true, "reason": ""},
 {"package": "nvidia-dali-cuda120", "import": "nvidia.dali.fn", "pin": "2.4.0", "version": "2.4.0", "ok": false,
  "reason": "import nvidia.dali.fn failed (exit 1): RuntimeError: no CUDA driver"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, ok, err := ReadStatus(py)
	if !ok || err != nil {
		t.Fatalf("ReadStatus: ok %v, err %v", ok, err)
	}
	for _, tc := range []struct{ peer, want string }{
		{"torch2", ""},
		{"dali", "peer dali: package nvidia-dali-cuda120 is unavailable in the peers env: import nvidia.dali.fn failed (exit 1): RuntimeError: no CUDA driver"},
		{"tfdata", "peer tfdata: package tensorflow-cpu is not in the peers env"},
	} {
		p, _ := Lookup(tc.peer)
		if got := st.Unavailable(p); got != tc.want {
			t.Errorf("Unavailable(%s) = %q, want %q", tc.peer, got, tc.want)
		}
	}
	if err := os.WriteFile(filepath.Join(env, StatusFile), []byte(`{"packages": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadStatus(py); err == nil || !strings.Contains(err.Error(), StatusFile) {
		t.Errorf("ReadStatus of a broken file: %v, want an error naming it", err)
	}
}

func TestDefaultPython(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(PythonEnv, "")
	t.Setenv("XDG_CACHE_HOME", cache)
	if got := DefaultPython(); got != "" {
		t.Errorf("DefaultPython with no env = %q, want \"\"", got)
	}
	made := filepath.Join(cache, "headspace", "peers-env", "abc")
	half := filepath.Join(cache, "headspace", "peers-env", "def") // no .complete: being made
	for _, d := range []string{made, half} {
		if err := os.MkdirAll(filepath.Join(d, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(made, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := DefaultPython(), filepath.Join(made, "bin", "python"); got != want {
		t.Errorf("DefaultPython = %q, want %q", got, want)
	}
	t.Setenv(PythonEnv, "/opt/py/bin/python")
	if got := DefaultPython(); got != "/opt/py/bin/python" {
		t.Errorf("DefaultPython with %s set = %q", PythonEnv, got)
	}
}

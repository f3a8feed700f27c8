package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPeersRefusedBeforeRunning: a peer name that does not exist, or one
// whose package the peers env's status file says is unavailable, is one
// line naming it and how to install it, exit 2, before anything runs (no
// --out written).
func TestPeersRefusedBeforeRunning(t *testing.T) {
	env := t.TempDir()
	if err := os.MkdirAll(filepath.Join(env, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(env, "bin", "python")
	if err := os.Symlink("/bin/sh", py); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env, "headspace-peers-status.json"), []byte(`{"python": "3.11.7", "packages": [
 {"package": "nvidia-dali-cuda120", "import": "nvidia.dali.fn", "pin": "2.4.0", "version": "", "ok": false,
  "reason": "not installed: ERROR: No matching distribution found for nvidia-dali-cuda120==2.4.0"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peers", "dali", "--python", py}, "peer dali: package nvidia-dali-cuda120 is unavailable in the peers env: not installed: ERROR: No matching distribution found for nvidia-dali-cuda120==2.4.0: run `make peers-env`"},
		{[]string{"--peers", "tfdata", "--python", py}, "peer tfdata: package tensorflow-cpu is not in the peers env: run `make peers-env`"},
		{[]string{"--peers", "pytorch", "--python", py}, `--peers: no peer "pytorch" (want all, all-bucket, or some of torch2, spdl, nodes-threads, nodes-procs, dali, tfdata, s3map, s3iter, streaming, litdata)`},
		{[]string{"--peers", "spdl", "--python", filepath.Join(env, "nope")}, "peer spdl: not installed: python " + filepath.Join(env, "nope")},
		{[]string{"--peers", "spdl", "--python", py, "--decoder", "go"}, "--decoder does not apply to --peers"},
		{[]string{"--peers", "spdl", "--python", py, "--crop", "1000"}, "--crop 1000 must be positive, even and fit the 512x512 images"},
		{[]string{"--peers", "spdl", "--python", py, "--jpeg-quality", "0"}, "--jpeg-quality"},
	} {
		code, _, stderr := runCLI(append(append([]string{"peer"}, tc.args...), "--out", out)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("peer %v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("peer %v: %s written (%v), want nothing run", tc.args, out, err)
		}
	}
}

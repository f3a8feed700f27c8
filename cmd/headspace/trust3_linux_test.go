//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Item 11 of issue 32: --max-failures covers every file that cannot be
// read. An image without read permission and a dangling x.jpg link are
// samples that fail: the index lists them, the page-cache warm-up skips
// them (it stopped the ladder before), and the run counts them, or fails
// with exit 2 naming one. Permissions do not bind root, so as root the
// built command runs as the user nobody (65534), over files nobody may
// read: the real permission path, not a simulation.
func TestUnreadableFileCounted(t *testing.T) {
	bin := buildHeadspace(t)
	dir := fixture(t, "imagefolder") // cat, dog, eel: 13 images
	cache := t.TempDir()
	noRead := filepath.Join(dir, "cat", "cat0.jpg")
	if err := os.Chmod(noRead, 0); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dog", "gone.jpg")
	if err := os.Symlink("nowhere.jpg", dangling); err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		// nobody must reach the command, the dataset and the cache.
		for _, p := range []string{bin, dir, cache} {
			for d := filepath.Dir(p); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Chmod(cache, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	headspace := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HEADSPACE_CACHE="+cache)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), o.String(), e.String()
	}
	if f, err := os.Open(noRead); err == nil && cred == nil {
		f.Close()
		t.Fatalf("%s is readable without permission: this user ignores permissions", noRead)
	}
	code, stdout, stderr := headspace("dataset", "index", dir)
	if code != 0 || !strings.Contains(stdout, "14 samples in 3 classes, jpeg+png, 2 unreadable") ||
		!strings.Contains(stdout, noRead+": permission denied") || !strings.Contains(stdout, dangling+": no such file or directory") {
		t.Errorf("dataset index: exit %d, %q %q; want 14 samples, the two unreadable named", code, stdout, stderr)
	}
	code, _, stderr = headspace(ladderOver(dir, "--batch", "14", "--max-failures", "16")...)
	if code != 0 {
		t.Errorf("ladder --max-failures 16: exit %d: %s", code, stderr)
	}
	code, _, stderr = headspace(ladderOver(dir, "--batch", "14")...)
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!(strings.Contains(stderr, noRead+": permission denied") || strings.Contains(stderr, dangling+": no such file")) {
		t.Errorf("ladder without --max-failures: exit %d, stderr %q; want 2 and one line naming an unreadable file", code, stderr)
	}
}

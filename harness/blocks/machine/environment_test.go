package machine

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/blocks/results"
)

func TestCPUModel(t *testing.T) {
	dir := t.TempDir()
	info := filepath.Join(dir, "cpuinfo")
	data := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC   7R13 Processor  \n\nprocessor\t: 1\nmodel name\t: other\n"
	if err := os.WriteFile(info, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cpuModel(info); got != "AMD EPYC 7R13 Processor" {
		t.Errorf("cpuModel = %q", got)
	}
	arm := filepath.Join(dir, "arm")
	if err := os.WriteFile(arm, []byte("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cpuModel(arm); got != runtime.GOARCH {
		t.Errorf("cpuModel without a model name = %q, want %q", got, runtime.GOARCH)
	}
	if got := cpuModel(filepath.Join(dir, "missing")); got != runtime.GOARCH {
		t.Errorf("cpuModel of a missing file = %q, want %q", got, runtime.GOARCH)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("HEADSPACE_COMMIT", "cafe123")
	env := Environment("cuda:0")
	var keys []string
	for _, c := range env {
		keys = append(keys, c.Key)
	}
	if !slices.Equal(keys, []string{"goos", "goarch", "cpu", "cores", "go", "commit", "device"}) {
		t.Errorf("keys = %q", keys)
	}
	if env[0].Value != runtime.GOOS || env[1].Value != runtime.GOARCH || env[3].Value != strconv.Itoa(runtime.NumCPU()) ||
		env[4].Value != runtime.Version() || env[5].Value != "cafe123" || env[6].Value != "cuda:0" {
		t.Errorf("Environment = %q", env)
	}
	if err := results.WriteFile(filepath.Join(t.TempDir(), "env.txt"), env, nil); err != nil {
		t.Errorf("Environment's config is not writable: %v", err)
	}
	if got := Environment(" ")[6].Value; got != "unknown" {
		t.Errorf("empty device = %q, want unknown", got)
	}
}

func TestCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: commit detection from a repository cannot be exercised")
	}
	t.Setenv("HEADSPACE_COMMIT", "")
	dir := t.TempDir()
	if got := commit(dir); got != "unknown" {
		t.Errorf("commit outside a repository = %q, want unknown", got)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	if got := commit(dir); got != "unknown" {
		t.Errorf("commit in a repository without commits = %q, want unknown", got)
	}
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "a.txt")
	run("commit", "-q", "-m", "a")
	head := run("rev-parse", "--short", "HEAD")
	// Untracked files do not make the tree dirty.
	if err := os.WriteFile(filepath.Join(dir, "untracked.txt"), []byte("u"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := commit(dir); got != head {
		t.Errorf("commit = %q, want %q", got, head)
	}
	if err := os.WriteFile(file, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := commit(dir); got != head+"-dirty" {
		t.Errorf("commit with a modified tracked file = %q, want %q", got, head+"-dirty")
	}
	t.Setenv("HEADSPACE_COMMIT", "v1.2.3")
	if got := commit(dir); got != "v1.2.3" {
		t.Errorf("commit with HEADSPACE_COMMIT = %q, want it verbatim", got)
	}
}

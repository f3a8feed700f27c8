package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
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
	if got := worktreeCommit(dir); got != "unknown" {
		t.Errorf("commit outside a repository = %q, want unknown", got)
	}
	run := gitIn(t, dir)
	run("init", "-q")
	if got := worktreeCommit(dir); got != "unknown" {
		t.Errorf("commit in a repository without commits = %q, want unknown", got)
	}
	file := filepath.Join(dir, "a.txt")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	run("add", "a.txt")
	run("commit", "-q", "-m", "a")
	head := run("rev-parse", "--short", "HEAD")
	// Untracked files do not make the tree dirty.
	if err := os.WriteFile(filepath.Join(dir, "untracked.txt"), []byte("u"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := worktreeCommit(dir); got != head {
		t.Errorf("commit = %q, want %q", got, head)
	}
	// Issue 32, item 16: two dirty trees are two code states, two labels;
	// the same diff, the same label.
	write("b")
	dirtyB := worktreeCommit(dir)
	if !regexp.MustCompile("^" + head + "-dirty-[0-9a-f]{8}$").MatchString(dirtyB) {
		t.Errorf("commit with a modified tracked file = %q, want %s-dirty-<8 hex digits>", dirtyB, head)
	}
	write("c")
	if got := worktreeCommit(dir); got == dirtyB || !strings.HasPrefix(got, head+"-dirty-") {
		t.Errorf("another diff = %q, want %s-dirty- and a hash other than %q's", got, head, dirtyB)
	}
	write("b")
	if got := worktreeCommit(dir); got != dirtyB {
		t.Errorf("the first diff again = %q, want %q", got, dirtyB)
	}
	t.Setenv("HEADSPACE_COMMIT", "v1.2.3")
	if got := commit(dir); got != "v1.2.3" {
		t.Errorf("commit with HEADSPACE_COMMIT = %q, want it verbatim", got)
	}
}

// gitIn returns a function that runs git in dir and returns its output.
func gitIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// TestCommitOfAnUnstampedBuild: a binary with no VCS stamp (go test's,
// as one built with GOFLAGS=-buildvcs=false) run outside any repository
// records "build-" and its executable's hash, not "unknown" (issue 41):
// two builds of other code are then two commits, and resume tells them
// apart. Where the executable cannot be read either, "unknown" stays.
func TestCommitOfAnUnstampedBuild(t *testing.T) {
	t.Setenv("HEADSPACE_COMMIT", "")
	if c, ok := binaryCommit(); ok {
		t.Fatalf("the test binary has a VCS stamp (%s): go test stamps none", c)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := "build-" + hex.EncodeToString(sum[:])[:8]
	if got := commit(t.TempDir()); got != want {
		t.Errorf("commit outside a repository = %q, want %q (the executable's hash)", got, want)
	}
	if got := orBuild("1a2b3c4", func() string { return "cafef00d" }); got != "1a2b3c4" {
		t.Errorf("orBuild of a commit = %q, want the commit", got)
	}
	if got := orBuild("unknown", func() string { return "unknown" }); got != "unknown" {
		t.Errorf("orBuild without a readable executable = %q, want unknown", got)
	}
}

func TestStampedCommit(t *testing.T) {
	const rev = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
	hash := func() string { return "cafef00d" }
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
		ok       bool
	}{
		{"no VCS stamp (go run, go test, -buildvcs=false)", []debug.BuildSetting{{Key: "GOOS", Value: "linux"}}, "", false},
		{"clean", []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}, "1a2b3c4", true},
		{"dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}, "1a2b3c4-dirty-cafef00d", true},
		{"a short revision", []debug.BuildSetting{{Key: "vcs.revision", Value: "42"}}, "42", true},
	} {
		got, ok := stampedCommit(tc.settings, hash)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Issue 32, item 16: the commit recorded is the binary's, from the
// revision the go command stamped into it, not that of the repository
// the binary happens to run in; and two dirty builds of different code
// get different labels. The test builds a small program that prints
// Environment's commit, in a repository of its own (the go command stamps
// nothing in a git worktree, where this project's helpers work), and
// runs it in another repository. The build before the fix printed the
// other repository's commit.
func TestCommitIsTheBinarys(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: a VCS-stamped build cannot be made")
	}
	t.Setenv("HEADSPACE_COMMIT", "")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command: %v", err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(gomod)
	src, other, bin := t.TempDir(), t.TempDir(), t.TempDir()
	program := func(greeting string) string {
		return "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/headspace-bench/headspace/harness/machine\"\n)\n\n" +
			"func main() {\n\tfor _, c := range machine.Environment(" + strconv.Quote(greeting) + ") {\n\t\tif c.Key == \"commit\" {\n\t\t\tfmt.Println(c.Value)\n\t\t}\n\t}\n}\n"
	}
	files := map[string]string{
		"go.mod":  "module stamped\n\n" + string(goLine) + "\n\nrequire github.com/headspace-bench/headspace v0.0.0\n\nreplace github.com/headspace-bench/headspace => " + root + "\n",
		"go.sum":  string(gosum),
		"main.go": program("a"),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	build := func() string {
		t.Helper()
		n++
		exe := filepath.Join(bin, fmt.Sprintf("stamped%d", n))
		cmd := exec.Command(goBin, "build", "-buildvcs=true", "-o", exe, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		run := exec.Command(exe)
		run.Dir = other
		out, err := run.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	build() // settles go.mod's requirements before the commit
	git := gitIn(t, src)
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "stamped")
	rev := git("rev-parse", "HEAD")[:7]
	o := gitIn(t, other)
	o("init", "-q")
	if err := os.WriteFile(filepath.Join(other, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	o("add", "x")
	o("commit", "-q", "-m", "other")
	if got := build(); got != rev {
		t.Errorf("a clean build run in another repository (%s) records %q, want the binary's %q", o("rev-parse", "--short", "HEAD"), got, rev)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(program("b")), 0o644); err != nil {
		t.Fatal(err)
	}
	dirtyB := build()
	if !regexp.MustCompile("^" + rev + "-dirty-[0-9a-f]{8}$").MatchString(dirtyB) {
		t.Errorf("a dirty build records %q, want %s-dirty-<8 hex digits>", dirtyB, rev)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(program("c")), 0o644); err != nil {
		t.Fatal(err)
	}
	if dirtyC := build(); dirtyC == dirtyB || !strings.HasPrefix(dirtyC, rev+"-dirty-") {
		t.Errorf("a dirty build of other code records %q, want %s-dirty- and a hash other than %q's", dirtyC, rev, dirtyB)
	}
}

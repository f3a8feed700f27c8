package machine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/internal/setting"
)

// Environment describes the machine a sweep runs on, as the leading
// configuration lines of a results file: goos, goarch, cpu (the model
// name from /proc/cpuinfo, or runtime.GOARCH where that has none), cores
// (runtime.NumCPU), go (the toolchain's version), commit and device. A
// resumed file must match them all, commit included (package resultfile), and
// the gate compares only files of one machine (package gate's MachineKeys).
//
// commit names the code that measures, the running binary's own:
//
//   - $HEADSPACE_COMMIT when set, used verbatim (a binary built outside
//     its repository, such as the GPU bundle's or a container's);
//   - else the revision the go command stamped into the binary
//     (runtime/debug.ReadBuildInfo's vcs.revision, its first 7 digits),
//     with "-dirty-" and a hash when vcs.modified says the tree had
//     uncommitted changes: the binary cannot see the diff it was built
//     from, so the first 8 hex digits of its own executable's SHA-256
//     stand for it (the same tree built the same way gives the same hash;
//     a change to the code compiled, another);
//   - else, for a binary with no VCS stamp (`go run`, `go test`, a build
//     with -buildvcs=false or from a git worktree, where the go command
//     stamps nothing), `git rev-parse --short HEAD` in the working
//     directory, with "-dirty-" and the first 8 hex digits of the SHA-256
//     of `git diff HEAD` when tracked files changed: the working
//     directory's repository stands in for the binary's;
//   - else, outside a repository (a binary built with
//     GOFLAGS=-buildvcs=false, common in CI containers, and run where
//     there is no repository, or no git), "build-" and the first 8 hex
//     digits of the SHA-256 of the running executable: the build itself,
//     so that two builds of different code are two commits, and a file is
//     resumed only by the build that made it;
//   - else, where even the executable cannot be read, "unknown".
//
// An empty device is recorded as "unknown".
func Environment(device string) []setting.Setting {
	return environment(device, "/proc/cpuinfo", "")
}

func environment(device, cpuinfo, dir string) []setting.Setting {
	if device = strings.TrimSpace(device); device == "" {
		device = "unknown"
	}
	return []setting.Setting{
		{Key: "goos", Value: runtime.GOOS},
		{Key: "goarch", Value: runtime.GOARCH},
		{Key: "cpu", Value: cpuModel(cpuinfo)},
		{Key: "cores", Value: strconv.Itoa(runtime.NumCPU())},
		{Key: "go", Value: runtime.Version()},
		{Key: "commit", Value: commit(dir)},
		{Key: "device", Value: device},
	}
}

// cpuModel returns the first "model name" in the cpuinfo file at path,
// or runtime.GOARCH when there is none.
func cpuModel(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return runtime.GOARCH
	}
	for line := range strings.Lines(string(data)) {
		key, val, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(key) == "model name" {
			if val = strings.Join(strings.Fields(val), " "); val != "" {
				return val
			}
		}
	}
	return runtime.GOARCH
}

// commit returns the commit to record: see Environment.
func commit(dir string) string {
	if c := strings.TrimSpace(os.Getenv("HEADSPACE_COMMIT")); c != "" {
		return c
	}
	if c, ok := binaryCommit(); ok {
		return c
	}
	return orBuild(worktreeCommit(dir), exeHash)
}

// orBuild is c, or, where c is "unknown" (no repository names the code),
// the build named by its executable's hash: "build-<hash>" (see
// Environment).
func orBuild(c string, hash func() string) string {
	if c != "unknown" {
		return c
	}
	if h := hash(); h != "unknown" {
		return "build-" + h
	}
	return c
}

// binaryCommit is the running binary's stamped revision (see
// Environment), computed once; ok is false without a VCS stamp.
var binaryCommit = sync.OnceValues(func() (string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	return stampedCommit(info.Settings, exeHash)
})

// exeHash is executableHash, computed once, when first asked for: the
// executable does not change while it runs.
var exeHash = sync.OnceValue(executableHash)

// stampedCommit is the commit that a binary's build settings name:
// vcs.revision's first 7 digits, with "-dirty-" and exeHash's digits when
// vcs.modified is true; ok is false when they name no revision.
func stampedCommit(settings []debug.BuildSetting, exeHash func() string) (c string, ok bool) {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "", false
	}
	c = rev[:min(len(rev), 7)]
	if modified == "true" {
		c += "-dirty-" + exeHash()
	}
	return c, true
}

// executableHash is the first 8 hex digits of the SHA-256 of the running
// executable, or "unknown" where it cannot be read.
func executableHash() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	f, err := os.Open(exe) // a binary is a regular file: no pipe to wait on
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// worktreeCommit is the commit of the repository at dir (see Environment).
func worktreeCommit(dir string) string {
	head, err := git(dir, "rev-parse", "--short", "HEAD")
	if err != nil || head == "" {
		return "unknown"
	}
	if status, err := git(dir, "status", "--porcelain", "--untracked-files=no"); err == nil && status != "" {
		diff, err := git(dir, "diff", "--no-ext-diff", "--no-color", "HEAD")
		if err != nil {
			return head + "-dirty-unknown"
		}
		sum := sha256.Sum256([]byte(diff))
		head += "-dirty-" + hex.EncodeToString(sum[:])[:8]
	}
	return head
}

func git(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

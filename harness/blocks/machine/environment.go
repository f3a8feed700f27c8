package machine

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/blocks/results"
)

// Environment describes the machine a sweep runs on, as the leading
// configuration lines of a results file: goos, goarch, cpu (the model
// name from /proc/cpuinfo, or runtime.GOARCH where that has none), cores
// (runtime.NumCPU), go (the toolchain's version), commit and device. A
// resumed file must match them all, and the gate compares only files of
// one machine (package gate's MachineKeys).
//
// commit is $HEADSPACE_COMMIT when set, used verbatim; otherwise
// `git rev-parse --short HEAD` in the working directory with "-dirty"
// appended when `git status` shows changes to tracked files; otherwise
// "unknown". An empty device is recorded as "unknown".
func Environment(device string) []results.Config {
	return environment(device, "/proc/cpuinfo", "")
}

func environment(device, cpuinfo, dir string) []results.Config {
	if device = strings.TrimSpace(device); device == "" {
		device = "unknown"
	}
	return []results.Config{
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
	head, err := git(dir, "rev-parse", "--short", "HEAD")
	if err != nil || head == "" {
		return "unknown"
	}
	if status, err := git(dir, "status", "--porcelain", "--untracked-files=no"); err == nil && status != "" {
		head += "-dirty"
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

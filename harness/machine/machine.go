// Package machine describes the machine a measurement ran on, for every
// report that sets numbers down: absolute numbers only mean something beside
// the CPU, the core count, the OS and the commit that produced them.
package machine

import (
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine is a description of this machine at one moment.
type Machine struct {
	CPU        string    // the first "model name" of /proc/cpuinfo
	Cores      int       // runtime.NumCPU: logical CPUs this process may use
	GOMAXPROCS int       // runtime.GOMAXPROCS(0)
	OS, Arch   string    // runtime.GOOS, runtime.GOARCH
	Distro     string    // os-release's PRETTY_NAME and the kernel release, e.g. "Debian GNU/Linux 12 (bookworm), linux 6.1.0"
	Go         string    // runtime.Version()
	Commit     string    // the binary's commit (-dirty-<hash> with local changes), HEADSPACE_COMMIT, build-<hash> of an unstamped executable, or "unknown": see Environment
	Date       time.Time // when it was described, UTC
}

// Describe describes this machine now. The CPU model and the commit are
// Environment's, so reports and result files agree.
func Describe() Machine {
	m := Machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Distro:     distro("/etc/os-release", "/proc/sys/kernel/osrelease"),
		Go:         runtime.Version(),
		Date:       time.Now().UTC(),
	}
	for _, c := range Environment("none") {
		switch c.Key {
		case "cpu":
			m.CPU = c.Value
		case "commit":
			m.Commit = c.Value
		}
	}
	return m
}

// distro is PRETTY_NAME from the os-release file and the kernel release,
// or runtime.GOOS where they cannot be read.
func distro(osRelease, kernel string) string {
	name := ""
	if data, err := os.ReadFile(osRelease); err == nil {
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
				name = strings.Trim(v, `"'`)
			}
		}
	}
	if k, err := os.ReadFile(kernel); err == nil && strings.TrimSpace(string(k)) != "" {
		kr := runtime.GOOS + " " + strings.TrimSpace(string(k))
		if name == "" {
			return kr
		}
		return name + ", " + kr
	}
	if name == "" {
		return runtime.GOOS
	}
	return name
}

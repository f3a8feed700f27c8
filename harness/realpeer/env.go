package realpeer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// StatusFile is the name of the status file ci/peers-env.sh writes in the
// env (peers/envstatus.py): which pinned packages imported.
const StatusFile = "headspace-peers-status.json"

// PythonEnv is the environment variable that names the peers env's python
// (`make test-peers` sets it); DefaultPython reads it first.
const PythonEnv = "HEADSPACE_PEERS_PYTHON"

// InstallHint is what to do when a peer cannot run.
const InstallHint = "run `make peers-env` (it installs the pinned peers/requirements.txt) and pass --python \"$(ci/peers-env.sh)\""

// Status is the env's status file.
type Status struct {
	Python   string          `json:"python"`
	Packages []PackageStatus `json:"packages"`
}

// PackageStatus is one pinned package: the version installed, or why it
// is unavailable.
type PackageStatus struct {
	Package string `json:"package"`
	Import  string `json:"import"`
	Pin     string `json:"pin"`
	Version string `json:"version"`
	OK      bool   `json:"ok"`
	Reason  string `json:"reason"`
}

// ReadStatus reads the status file of the env python belongs to
// (<env>/bin/python: <env>/StatusFile); ok is false when there is none
// (a python that is not the peers env's).
func ReadStatus(python string) (s Status, ok bool, err error) {
	path := filepath.Join(filepath.Dir(filepath.Dir(python)), StatusFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, false, fmt.Errorf("%s: %w", path, err)
	}
	return s, true, nil
}

// Unavailable is the first package p needs that s says is unavailable,
// as one line naming the peer, the package and the reason; "" if none.
func (s Status) Unavailable(p Peer) string {
	for _, name := range p.Packages {
		i := slices.IndexFunc(s.Packages, func(ps PackageStatus) bool { return ps.Package == name })
		switch {
		case i < 0:
			return fmt.Sprintf("peer %s: package %s is not in the peers env", p.Name, name)
		case !s.Packages[i].OK:
			return fmt.Sprintf("peer %s: package %s is unavailable in the peers env: %s", p.Name, name, s.Packages[i].Reason)
		}
	}
	return ""
}

// DefaultPython is the peers env's python: $HEADSPACE_PEERS_PYTHON, else
// the most recently made env under the cache (where ci/peers-env.sh makes
// it), else "".
func DefaultPython() string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	marks, _ := filepath.Glob(filepath.Join(cache, "headspace", "peers-env", "*", ".complete"))
	best, bestTime := "", int64(0)
	for _, m := range marks {
		if st, err := os.Stat(m); err == nil && st.ModTime().UnixNano() > bestTime {
			best, bestTime = filepath.Join(filepath.Dir(m), "bin", "python"), st.ModTime().UnixNano()
		}
	}
	return best
}

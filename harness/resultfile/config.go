package resultfile

// The configuration block of a results file: its lines, their rules,
// and how two blocks differ.

import (
	"slices"

	"github.com/headspace-bench/headspace/internal/setting"
)

// Config is one configuration line of a results file, written as
// "key: value". Keys start with a lower-case letter and contain no
// spaces or upper-case letters (the Go benchmark format's rule); values
// are a single non-empty line. It is the neutral setting.Setting, so
// that the blocks that state settings need not import this package.
type Config = setting.Setting

// BusyKey is the configuration line of a run taken on a machine that
// never got quiet before it (package disturb's wait ended at its bound):
// "machine-busy: cpu pressure 37% after waiting 30s". It describes the
// session, not the setup, so a resumed file may differ in it.
const BusyKey = "machine-busy"

// DateKey and ElapsedKey are the configuration lines of when a run began
// and how long it took (reproduce writes both).
const (
	DateKey    = "date"
	ElapsedKey = "elapsed"
)

// SessionKeys are the configuration lines that describe the session a
// run was taken in rather than its setup: the machine's load when it
// began (BusyKey), its date and its run time. Two runs of one setup may
// differ in them, so every setup check (resume, merge, the history's
// series, the gate's configuration differences) ignores them, and a
// merged file keeps each shard's. This is the one list of them.
var SessionKeys = []string{BusyKey, DateKey, ElapsedKey}

// IsSessionKey reports whether key is one of SessionKeys.
func IsSessionKey(key string) bool { return slices.Contains(SessionKeys, key) }

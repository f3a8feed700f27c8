package resultfile

// The configuration block of a results file: its lines, their rules,
// and how two blocks differ.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/internal/setting"
)

// Config is one configuration line of a results file, written as
// "key: value". Keys start with a lower-case letter and contain no
// spaces or upper-case letters (the Go benchmark format's rule); values
// are a single non-empty line. It is the neutral setting.Setting, so
// that the blocks that state settings need not import this package.
type Config = setting.Setting

// fileConfig checks config and converts it to benchfmt file configuration.
func fileConfig(config []Config) ([]benchfmt.Config, error) {
	out := make([]benchfmt.Config, 0, len(config))
	seen := map[string]bool{}
	for _, c := range config {
		if err := checkKey(c.Key); err != nil {
			return nil, err
		}
		if seen[c.Key] {
			return nil, fmt.Errorf("config key %q given twice", c.Key)
		}
		seen[c.Key] = true
		v := c.Value
		if v == "" || strings.ContainsAny(v, "\r\n") || v[0] == ' ' || v[0] == '\t' {
			return nil, fmt.Errorf("config %s: value %q must be one non-empty line not starting with a space", c.Key, v)
		}
		out = append(out, benchfmt.Config{Key: c.Key, Value: []byte(v), File: true})
	}
	return out, nil
}

// checkKey enforces the Go benchmark format's rule for configuration keys.
func checkKey(k string) error {
	for i, r := range k {
		if i == 0 && !unicode.IsLower(r) || unicode.IsSpace(r) || unicode.IsUpper(r) || r == ':' {
			return fmt.Errorf("config key %q must start with a lower-case letter and hold no spaces, colons or upper-case letters", k)
		}
	}
	if k == "" {
		return errors.New("empty config key")
	}
	return nil
}

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

// configDiff describes how have (a result's configuration read from the
// file) differs from want, ignoring "commit" and SessionKeys; "" if it
// does not.
func configDiff(have, want []benchfmt.Config) string {
	var diffs []string
	h := map[string]string{}
	for _, c := range have {
		if c.File {
			h[c.Key] = string(c.Value)
		}
	}
	w := map[string]bool{}
	for _, c := range want {
		w[c.Key] = true
		if c.Key == "commit" || IsSessionKey(c.Key) {
			continue
		}
		hv, ok := h[c.Key]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: not in file, now %q", c.Key, c.Value))
		case hv != string(c.Value):
			diffs = append(diffs, fmt.Sprintf("%s: %q in file, now %q", c.Key, hv, c.Value))
		}
	}
	var extra []string
	for k := range h {
		if !w[k] && k != "commit" && !IsSessionKey(k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		diffs = append(diffs, fmt.Sprintf("%s: %q in file, not set now", k, h[k]))
	}
	return strings.Join(diffs, "; ")
}

// commitOf is the "commit" key's value in a configuration, or "".
func commitOf(cfg []benchfmt.Config) string {
	for _, c := range cfg {
		if c.File && c.Key == "commit" {
			return string(c.Value)
		}
	}
	return ""
}

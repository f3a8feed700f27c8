package cli

import (
	"errors"
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(what, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, Usagef("%s: %q is not a whole number", what, f)
		}
		if n <= 0 {
			return nil, Usagef("%s: %d must be positive", what, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseSize parses "1024" (square) or "1024x768" (width x height).
func ParseSize(what, s string) (w, h int, err error) {
	ws, hs, found := strings.Cut(strings.ToLower(s), "x")
	if !found {
		hs = ws
	}
	w, err1 := strconv.Atoi(strings.TrimSpace(ws))
	h, err2 := strconv.Atoi(strings.TrimSpace(hs))
	if err1 != nil || err2 != nil {
		return 0, 0, Usagef("%s: %q is not N or WxH", what, s)
	}
	if w <= 0 || h <= 0 {
		return 0, 0, Usagef("%s: %dx%d must be positive", what, w, h)
	}
	return w, h, nil
}

// ParseList splits a comma-separated list of names and checks each is allowed.
func ParseList(what, s string, allowed []string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, a := range allowed {
			ok = ok || f == a
		}
		if !ok {
			return nil, Usagef("%s: unknown %q (want %s)", what, f, strings.Join(allowed, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// ParseShard parses "i/n" with 0 <= i < n.
func ParseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n <= 0 || i < 0 || i >= n {
		return 0, 0, Usagef("--shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// NoRepeats refuses a list that names an item twice.
func NoRepeats(what string, items []string) error {
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it] {
			return Usagef("%s names %q twice", what, it)
		}
		seen[it] = true
	}
	return nil
}

// FromOnly refuses, for a command given --from, every flag set but
// --from and keep: the flags of a run that measures mean nothing to a
// rebuild from a saved file.
func FromOnly(fs *flag.FlagSet, keep ...string) error {
	var measuring []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "from" && !slices.Contains(keep, f.Name) {
			measuring = append(measuring, "--"+f.Name)
		}
	})
	if len(measuring) > 0 {
		return Usagef("--from rebuilds from a saved file; %s only apply to a run that measures", strings.Join(measuring, ", "))
	}
	return nil
}

// FromErr is a --from file's read error as a usage error (exit 2): "no
// such file" for one that is missing, else the error itself.
func FromErr(from string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return Usagef("--from %s: no such file", from)
	}
	return Usagef("--from: %v", err)
}

// ParseBools parses a comma-separated list of true and false.
func ParseBools(what, s string) ([]bool, error) {
	names, err := ParseList(what, s, []string{"true", "false"})
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(names))
	for i, n := range names {
		out[i] = n == "true"
	}
	return out, nil
}

// CommandLine is the command as typed, arguments with spaces quoted.
func CommandLine(name string, args []string) string {
	parts := []string{name}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

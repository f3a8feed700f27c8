package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// parseInts parses a comma-separated list of positive integers.
func parseInts(what, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, usagef("%s: %q is not a whole number", what, f)
		}
		if n <= 0 {
			return nil, usagef("%s: %d must be positive", what, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSize parses "1024" (square) or "1024x768" (width x height).
func parseSize(what, s string) (w, h int, err error) {
	ws, hs, found := strings.Cut(strings.ToLower(s), "x")
	if !found {
		hs = ws
	}
	w, err1 := strconv.Atoi(strings.TrimSpace(ws))
	h, err2 := strconv.Atoi(strings.TrimSpace(hs))
	if err1 != nil || err2 != nil {
		return 0, 0, usagef("%s: %q is not N or WxH", what, s)
	}
	if w <= 0 || h <= 0 {
		return 0, 0, usagef("%s: %dx%d must be positive", what, w, h)
	}
	return w, h, nil
}

// parseList splits a comma-separated list of names and checks each is allowed.
func parseList(what, s string, allowed []string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, a := range allowed {
			ok = ok || f == a
		}
		if !ok {
			return nil, usagef("%s: unknown %q (want %s)", what, f, strings.Join(allowed, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// parseShard parses "i/n" with 0 <= i < n.
func parseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n <= 0 || i < 0 || i >= n {
		return 0, 0, usagef("--shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// noRepeats refuses a list that names an item twice.
func noRepeats(what string, items []string) error {
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it] {
			return usagef("%s names %q twice", what, it)
		}
		seen[it] = true
	}
	return nil
}

// fromOnly refuses, for a command given --from, every flag set but
// --from and keep: the flags of a run that measures mean nothing to a
// rebuild from a saved file.
func fromOnly(fs *flag.FlagSet, keep ...string) error {
	var measuring []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "from" && !slices.Contains(keep, f.Name) {
			measuring = append(measuring, "--"+f.Name)
		}
	})
	if len(measuring) > 0 {
		return usagef("--from rebuilds from a saved file; %s only apply to a run that measures", strings.Join(measuring, ", "))
	}
	return nil
}

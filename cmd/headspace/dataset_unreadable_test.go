package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestPrintUnreadable: dataset index names the first maxUnreadableShown
// unreadable samples and counts the rest, for local and remote data alike.
func TestPrintUnreadable(t *testing.T) {
	names := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("s%02d: bad", i))
		}
		return out
	}
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "  unreadable: s%02d: bad\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, lines(1)},
		{maxUnreadableShown, lines(maxUnreadableShown)},
		{maxUnreadableShown + 1, lines(maxUnreadableShown) + "  … and 1 more unreadable\n"},
		{maxUnreadableShown + 5, lines(maxUnreadableShown) + "  … and 5 more unreadable\n"},
	} {
		var b strings.Builder
		printUnreadable(&b, names(tc.n))
		if got := b.String(); got != tc.want {
			t.Errorf("%d unreadable: got\n%s\nwant\n%s", tc.n, got, tc.want)
		}
	}
}

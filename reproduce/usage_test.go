package reproduce

import (
	"strings"
	"testing"
)

// TestUsageListsTheReports checks that headspace reproduce's help lists
// every report by its ID and summary, wrapped at 76 columns.
func TestUsageListsTheReports(t *testing.T) {
	usage := Usage()
	for _, d := range Docs {
		if !strings.Contains(usage, "\n  "+d.ID+"  ") || !strings.Contains(strings.Join(strings.Fields(usage), " "), d.Summary) {
			t.Errorf("reproduce's help does not list %s, %q:\n%s", d.ID, d.Summary, usage)
		}
	}
	for _, tc := range []struct{ head, text, want string }{
		{"  1  ", "short", "  1  short\n"},
		{"  1  ", "aaaa bbbb cccc", "  1  aaaa\n     bbbb\n     cccc\n"},
		{"  1  ", "aaaa bb", "  1  aaaa bb\n"},
	} {
		if got := wrapItem(tc.head, tc.text, 12); got != tc.want {
			t.Errorf("wrapItem(%q, %q, 12) = %q, want %q", tc.head, tc.text, got, tc.want)
		}
	}
}

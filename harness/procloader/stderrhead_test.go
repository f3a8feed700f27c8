package procloader

import (
	"strings"
	"testing"
)

func TestStderrHead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"nothing", nil, ""},
		{"blank lines first", []string{"\n  \n", "headspace worker:   bad   sample 3\n", "more\n"}, "headspace worker: bad sample 3"},
		{"a panic's trace dropped", []string{"panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n"}, "panic: boom"},
		{"a line written in pieces", []string{"fatal ", "error: ", "out of memory\n"}, "fatal error: out of memory"},
		{"beyond Max dropped", []string{strings.Repeat("x", StderrMax) + "\nlater\n"}, strings.Repeat("x", StderrMax)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w StderrHead
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := w.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

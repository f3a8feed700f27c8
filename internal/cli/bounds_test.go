package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// The test's bounds, declared once as a package declares its own (the
// table is the process's: a second run of the test declares nothing).
var _ = Declare(map[string]Bound{
	"declare-test-n":                  {1, 10},
	"declare-test-cmd other":          {1, 3},
	"declare-test-p":                  {1, 100},
	"declare-test-cmd declare-test-p": {1, 3},
})

// TestDeclare checks the bounds table a package declares its flags'
// bounds into: a command's own bound ("command flag") applies to that
// command's flag and a shared one to every command's, ParseArgs refuses a value outside the bound
// that applies, and a name declared twice panics, naming the flag.
func TestDeclare(t *testing.T) {
	parse := func(command string, args ...string) error {
		fs := NewFlagSet(command, "", io.Discard)
		fs.Int("declare-test-n", 2, "")
		fs.Int("other", 2, "")
		return ParseArgs(fs, args)
	}
	for _, tc := range []struct {
		command string
		args    []string
		refused string // "": accepted
	}{
		{"declare-test-cmd", []string{"--declare-test-n=10", "--other=3"}, ""},
		{"declare-test-cmd", []string{"--declare-test-n=11"}, "--declare-test-n 11: want 1 to 10"},
		{"declare-test-cmd", []string{"--other=4"}, "--other 4: want 1 to 3"},
		{"declare-test-cmd", []string{"--declare-test-n=0"}, "--declare-test-n 0: want 1 to 10"},
		// a verb's own flags are its own ("dataset write n"), and another
		// command's --other has no bound: a mistake, not a usage error
		{"declare-test-cmd verb", []string{"--other=2"}, "--other has no bound"},
		{"declare-test-else", []string{"--declare-test-n=3"}, "--other has no bound"},
	} {
		err := parse(tc.command, tc.args...)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s %v: %v, want accepted", tc.command, tc.args, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s %v: %v, want an error saying %q", tc.command, tc.args, err, tc.refused)
		}
	}
	if b, ok := BoundOf(flag.NewFlagSet("headspace declare-test-cmd", flag.ContinueOnError), "other"); !ok || b != (Bound{1, 3}) {
		t.Errorf("BoundOf(declare-test-cmd, other) = %v, %v; want {1 3}, true", b, ok)
	}
	// A command's own bound takes precedence over the shared one.
	for cmd, want := range map[string]Bound{"declare-test-cmd": {1, 3}, "declare-test-else": {1, 100}} {
		if b, ok := BoundOf(flag.NewFlagSet("headspace "+cmd, flag.ContinueOnError), "declare-test-p"); !ok || b != want {
			t.Errorf("BoundOf(%s, declare-test-p) = %v, %v; want %v, true", cmd, b, ok, want)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "--declare-test-n") {
			t.Errorf("declaring --declare-test-n twice: recovered %v, want a panic naming it", r)
		}
	}()
	Declare(map[string]Bound{"declare-test-n": {0, 5}})
}

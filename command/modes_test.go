package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// TestModesOf: a command of modes runs the mode its flag picks (the
// default one without), refuses two modes' flags and a flag the picked
// mode does not define with one usage error naming it, picks by the
// file's first record with --from (a file none owns going to the
// first), and lists every mode's flags in its --help.
func TestModesOf(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ofB := file("b.txt", "n: 1\n\nBenchmarkB/x=1 1 1 ns/op\n")
	ofNone := file("c.txt", "BenchmarkC/x=1 1 1 ns/op\n")
	mode := func(flagName, name, bench, own string) Mode {
		return Mode{Flag: flagName, Name: name, Layout: resultfile.Layout{Owner: bench, Keys: map[string][]string{bench: {"x"}}},
			Flags: func(fs *flag.FlagSet) {
				fs.String("from", "", "")
				fs.String(own, "", "the `"+own+"`")
				if flagName != "" {
					fs.Bool(flagName, false, "")
				}
			},
			Run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
				_, err := io.WriteString(stdout, name+" "+strings.Join(args, " "))
				return err
			}}
	}
	c := ModesOf("modes", "", "two modes", mode("", "A", "A", "only-a"), mode("b", "--b", "B", "only-b"))
	for _, tc := range []struct {
		args      []string
		want, err string
	}{
		{[]string{"--only-a", "1"}, "A --only-a 1", ""},
		{[]string{"--b", "--only-b", "2"}, "--b --b --only-b 2", ""},
		{[]string{"--b=false", "--only-a", "1"}, "A --only-a 1", ""},
		{[]string{"--b=true", "--only-b", "1"}, "--b --b=true --only-b 1", ""},
		{[]string{"--b", "--only-a", "1"}, "", "--only-a does not apply to --b"},
		{[]string{"--only-b", "1"}, "", "--only-b does not apply to A"},
		{[]string{"--from", ofB}, "--b --from " + ofB, ""},
		{[]string{"--from", ofNone}, "A --from " + ofNone, ""},
		{[]string{"--from", filepath.Join(dir, "none.txt")}, "", "no such file"},
		{[]string{"--nope"}, "", "flag provided but not defined: -nope"},
	} {
		var out bytes.Buffer
		err := c.Run(t.Context(), tc.args, &out, io.Discard)
		var ue cli.UsageError
		switch {
		case tc.err == "" && (err != nil || out.String() != tc.want):
			t.Errorf("%v: ran %q, %v; want %q", tc.args, out.String(), err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ue)):
			t.Errorf("%v: %v; want a usage error with %q", tc.args, err, tc.err)
		}
	}
	var help bytes.Buffer
	c.Run(t.Context(), []string{"--help"}, &help, io.Discard)
	for _, want := range []string{"two modes", "-only-a only-a", "-only-b only-b", "-b\n", "-from"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, help.String())
		}
	}
}

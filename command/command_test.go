package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// streamed is a Commanded experiment for the command path's own tests: it
// streams N records, Squares/i=…, each group of two given to env.Add
// together, and cancels its run's context (SIGINT) before the record
// cancelAt.
type streamed struct {
	N, cancelAt int
	cancel      context.CancelFunc
	reports     bool   // is Interrupts
	interrupted bool   // Interrupt was called
	line        string // what Invoked was given
}

type streamedOutcome struct{ Squares []int }

func (streamed) Name() string     { return "Squares" }
func (streamed) Document() string { return "" }
func (s streamed) Settings() []resultfile.Config {
	return []resultfile.Config{{Key: "n", Value: strconv.Itoa(s.N)}}
}
func (s streamed) Measure(ctx context.Context, env workloads.Env) (streamedOutcome, error) {
	return streamedOutcome{}, errors.New("unused")
}
func (s streamed) Run(ctx context.Context, env workloads.Env) ([]*benchfmt.Result, error) {
	var out []*benchfmt.Result
	for i := 1; i <= s.N; i += 2 {
		if i == s.cancelAt {
			s.cancel()
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		recs := streamedCodec.Encode(streamedOutcome{Squares: make([]int, i+1)})[i-1:]
		if err := env.Add(recs...); err != nil {
			return out, err
		}
		out = append(out, recs...)
	}
	return out, nil
}
func (streamed) Codec() workloads.Codec[streamedOutcome] { return streamedCodec }
func (*streamed) Flags(fs *flag.FlagSet)                 {}
func (*streamed) File() driver.Mode                      { return driver.Stream }
func (s *streamed) Invoked(line, from string)            { s.line = line + "|" + from }
func (s *streamed) Report(o streamedOutcome, w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d squares, interrupted %v\n", len(o.Squares), s.interrupted)
	return err
}

// interruptsStreamed is streamed with a report of an interrupted run.
type interruptsStreamed struct{ streamed }

func (s *interruptsStreamed) Interrupt() string {
	s.interrupted = true
	return "the squares finished"
}

var streamedCodec = workloads.NewCodec("Squares", map[string][]string{"Squares": {"i"}},
	func(o streamedOutcome) []*benchfmt.Result {
		var out []*benchfmt.Result
		for i := range o.Squares {
			out = append(out, &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(fmt.Sprintf("Squares/i=%d", i+1), 1)), Iters: 1,
				Values: []benchfmt.Value{{Value: float64((i + 1) * (i + 1)), Unit: "squares"}}})
		}
		return out
	},
	func(recs []workloads.Record) (streamedOutcome, error) {
		var o streamedOutcome
		for _, r := range recs {
			v, err := r.Value("squares")
			if err != nil {
				return o, err
			}
			o.Squares = append(o.Squares, int(v))
		}
		return o, nil
	})

// TestCommandReportsAnInterruptedRun: a streamed command interrupted
// after some of its records prints the report of what finished where
// its experiment Interrupts (node's table of the counts finished), names
// its file as partial and exits 130 saying what the output shows; one
// that does not only says where the records are. The records of one
// env.Add are in the file together, and Invoked is given the command
// line (issue 53: the shared path had neither, so node kept its own).
func TestCommandReportsAnInterruptedRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reports bool
		want    []string
		kept    string
	}{
		{"Interrupts", true, []string{"4 squares, interrupted true\n", "results: OUT (partial: interrupted)\n"}, "interrupted: the squares finished"},
		{"not", false, nil, "interrupted: the 4 results finished are in OUT, marked partial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "squares.txt")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := streamed{N: 8, cancelAt: 5, cancel: cancel}
			var e interface {
				workloads.Commanded[streamedOutcome]
			} = &s
			is := &interruptsStreamed{s}
			if tc.reports {
				e = is
			}
			var stdout bytes.Buffer
			err := runCommand[streamedOutcome](ctx, e, "squares", "", []string{"--out", out}, &stdout, io.Discard)
			var ie driver.Interrupted
			if !errors.As(err, &ie) || err.Error() != strings.ReplaceAll(tc.kept, "OUT", out) {
				t.Errorf("error %v; want %q", err, strings.ReplaceAll(tc.kept, "OUT", out))
			}
			if want := strings.ReplaceAll(strings.Join(tc.want, ""), "OUT", out); stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
			recs, err := resultfile.Read(out)
			if err != nil || len(recs) != 4 || recs[0].GetConfig("partial") != "true" {
				t.Errorf("%s: %d records (%v); want the 4 of the two groups finished, marked partial", out, len(recs), err)
			}
			line := s.line
			if tc.reports {
				line = is.line
			}
			if want := "headspace squares --out " + out + "|"; line != want {
				t.Errorf("Invoked with %q, want %q", line, want)
			}
		})
	}
}

// ended is streamed with a Setup whose End ends the output and which
// may make no records (Empty), as whatif's.
type ended struct {
	streamed
	empty bool
}

func (e *ended) Prepare(ctx context.Context, stdout, stderr io.Writer) (workloads.Setup, error) {
	return workloads.Setup{Partial: "unused", Empty: e.empty, End: func(w io.Writer, o driver.Outcome) error {
		_, err := fmt.Fprintf(w, "end %q interrupted %v\n", o.Path, o.Interrupted)
		return err
	}}, nil
}

// TestCommandSetupEnd: Setup.End ends a run's output in place of the
// results line, after Report, and returns the command's error;
// Setup.Empty lets a run make no records, its Report given R's zero
// value, where a run without it fails to decode nothing (issue 53:
// whatif --stats without --verify prints its table alone).
func TestCommandSetupEnd(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		n       int
		empty   bool
		out     string
		want    string
		wantErr string
	}{
		{"records", 4, false, "squares.txt", "4 squares, interrupted false\nend \"OUT\" interrupted false\n", ""},
		{"none, Empty", 0, true, "", "0 squares, interrupted false\nend \"\" interrupted false\n", ""},
		{"none", 0, false, "", "", "no records of Squares"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &ended{streamed: streamed{N: tc.n}, empty: tc.empty}
			var args []string
			out := ""
			if tc.out != "" {
				out = filepath.Join(dir, tc.out)
				args = []string{"--out", out}
			}
			var stdout bytes.Buffer
			err := runCommand[streamedOutcome](context.Background(), e, "squares", "", args, &stdout, io.Discard)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v; want %q", err, tc.wantErr)
			}
			if want := strings.ReplaceAll(tc.want, "OUT", out); stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
		})
	}
}

// argued is streamed taking the arguments after its flags, as tune's
// command after --.
type argued struct {
	streamed
	args []string
}

func (a *argued) TakeArgs(fs *flag.FlagSet, _ []string) error {
	if fs.NArg() > 0 && fs.Arg(0) == "bad" {
		return errors.New("bad argument")
	}
	a.args = fs.Args()
	return nil
}

// TestCommandTakesArgs: an ArgsTaker's command is given the arguments
// after its flags (tune -- COMMAND) and runs; it refuses them where
// TakeArgs does, and with --from; a command that is no ArgsTaker refuses
// an argument after its flags.
func TestCommandTakesArgs(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.txt")
	if err := runCommand[streamedOutcome](context.Background(), &streamed{N: 2}, "squares", "", []string{"--out", saved}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		taker    bool
		args     []string
		wantArgs []string
		wantErr  string
	}{
		{"taken", true, []string{"--", "python3", "train.py"}, []string{"python3", "train.py"}, ""},
		{"none", true, nil, []string{}, ""},
		{"refused by TakeArgs", true, []string{"--", "bad"}, nil, "bad argument"},
		{"with --from", true, []string{"--from", saved, "--", "python3"}, nil, "the command after -- only applies to a run that measures"},
		{"no ArgsTaker", false, []string{"--", "python3"}, nil, `unexpected argument "python3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &argued{streamed: streamed{N: 2}}
			var e workloads.Commanded[streamedOutcome] = a
			if !tc.taker {
				e = &a.streamed
			}
			var stdout bytes.Buffer
			err := runCommand[streamedOutcome](context.Background(), e, "squares", "", tc.args, &stdout, io.Discard)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v; want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && (strings.Join(a.args, " ") != strings.Join(tc.wantArgs, " ") || stdout.String() != "2 squares, interrupted false\n") {
				t.Errorf("args %q, stdout %q; want %q and the run's report", a.args, stdout.String(), tc.wantArgs)
			}
		})
	}
}

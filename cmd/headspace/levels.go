package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/internal/cli"
)

func init() {
	register(cli.Command{Name: "levels", Summary: "the caching ladder's table: the pipeline's stages and each level's cut in it (--json for scripts)", Run: runLevels})
}

const levelsUsage = `
headspace levels [--json]

Prints the one table of the caching ladder (package level): the pipeline
as an ordered list of stages, the sources whose pipeline has each one and
the ladder's name for it; then each level: the stage it cuts at (it runs
every stage from there on, everything before is its cache), the source it
needs, what it keeps of each source's pipeline, what it caches in words
and what a drop at it is attributed to.

--json prints the same table as JSON, which the reports and the peer
scripts (peers/torch/ladder.py) read rather than a copy of the levels.`

func runLevels(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("levels", levelsUsage, stdout)
	asJSON := fs.Bool("json", false, "print the table as JSON")
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected argument %q", fs.Arg(0))
	}
	if *asJSON {
		b, err := level.JSON()
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	t := level.Describe()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tsources\tattributed to")
	for _, s := range t.Pipeline {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(s.Sources, ","), s.Attributed)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "level\tcut\tneeds\tkeeps\tcaches\tattributed to\truns")
	for _, l := range t.Levels {
		var kept []string
		for _, src := range []level.Source{level.Synthetic, level.Disk, level.Bucket} {
			if s, ok := l.Kept[src.String()]; ok {
				kept = append(kept, src.String()+":"+string(s))
			}
		}
		keeps := strings.Join(kept, ",")
		if keeps == "" {
			keeps = "-"
		}
		runs := make([]string, len(l.Runs))
		for i, s := range l.Runs {
			runs[i] = string(s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Cut, l.Needs, keeps, l.Caches, l.Stage, strings.Join(runs, " "))
	}
	return tw.Flush()
}

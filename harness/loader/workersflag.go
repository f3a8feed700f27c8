package loader

import (
	"errors"
	"flag"
	"strconv"
	"strings"

	"github.com/headspace-bench/headspace/internal/cli"
)

// Workers is the value of --workers, the one type of the flag in every
// command (WorkersFlag): one count (node, whatif, analyze, reproduce,
// dataset write), or comma-separated counts where the command sweeps
// them (ladder, loaders, peer). A single count is a number to the flag
// package (flag.Getter), so that cli.CheckBounds checks it against the
// flag's bound as it is parsed; a list is checked against the same bound
// by Counts.
type Workers struct {
	n     int    // a single count
	raw   string // a list, as given
	list  bool
	bound cli.Bound
	into  *int   // WorkersVar's field, set with n
	intoN *[]int // WorkersListVar's field, set with the list's counts
}

// WorkersFlag declares --workers on fs with usage, its default def (one
// count, or with list the counts a sweep takes) and its bound, the
// command's own where it declares one ("dataset write workers"), else
// the pipeline's (0 to MaxWorkers, declared beside the data flags): the
// one definition of --workers.
func WorkersFlag(fs *flag.FlagSet, list bool, usage string, def ...int) *Workers {
	w := &Workers{list: list}
	w.bound, _ = cli.BoundOf(fs, "workers")
	parts := make([]string, len(def))
	for i, n := range def {
		parts[i] = strconv.Itoa(n)
	}
	if list {
		w.raw = strings.Join(parts, ",")
	} else if len(def) > 0 {
		w.n = def[0]
	}
	fs.Var(w, "workers", usage)
	return w
}

// WorkersVar is WorkersFlag for one count bound to an experiment's
// field: its default is *n, and a value given is written to *n as it is
// parsed.
func WorkersVar(fs *flag.FlagSet, n *int, usage string) *Workers {
	w := WorkersFlag(fs, false, usage, *n)
	w.into = n
	return w
}

// WorkersListVar is WorkersFlag for a list bound to an experiment's
// field: its default is *ns, and a list given is read (Counts: each count
// bounded) into *ns as it is parsed.
func WorkersListVar(fs *flag.FlagSet, ns *[]int, usage string) *Workers {
	w := WorkersFlag(fs, true, usage, *ns...)
	w.intoN = ns
	return w
}

// String is the value as given: the count, or the list.
func (w *Workers) String() string {
	if w == nil || !w.list {
		n := 0
		if w != nil {
			n = w.n
		}
		return strconv.Itoa(n)
	}
	return w.raw
}

// errParse is the flag package's own error for a number that does not
// parse, so that a single count's message is the one flag.IntVar gave.
var errParse = errors.New("parse error")

// Set sets the value: a list is kept as given and read by Counts; a
// single count must be a whole number.
func (w *Workers) Set(s string) error {
	if w.list {
		w.raw = s
		if w.intoN != nil {
			ns, err := w.Counts()
			if err != nil {
				return err
			}
			*w.intoN = ns
		}
		return nil
	}
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errParse
	}
	w.n = int(n)
	if w.into != nil {
		*w.into = w.n
	}
	return nil
}

// Get is a single count (an int, which cli.CheckBounds checks), or the
// list as given.
func (w *Workers) Get() any {
	if w.list {
		return w.raw
	}
	return w.n
}

// N is the single count.
func (w *Workers) N() int { return w.n }

// Counts are the comma-separated counts of a list, each a positive whole
// number within the flag's bound, or a usage error naming the first
// that is not.
func (w *Workers) Counts() ([]int, error) {
	if !w.list {
		return []int{w.n}, nil
	}
	ns, err := cli.ParseInts("--workers", w.raw)
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		if err := cli.InRange("--workers", n, max(1, int(w.bound.Lo)), int(w.bound.Hi)); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

package ownloop_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

func TestParseCommandRefuses(t *testing.T) {
	script := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(script, []byte("pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{nil, "no command"},
		{[]string{"no-such-command-h43"}, "not found"},
		{[]string{"ls", script}, "is not a Python interpreter"},
		{[]string{"torchrun", "--nnodes", "2", "--nproc-per-node", "2", script}, "more than one node"},
		{[]string{python, "-m", "torch.distributed.run", "--nnodes", "2", script}, "more than one node"},
		{[]string{"deepspeed", "--num_gpus", "2", script}, "deepspeed is not supported yet"},
		{[]string{python, "-c", "print(1)"}, "-c runs code"},
		{[]string{python, filepath.Join(t.TempDir(), "missing.py")}, "missing.py"},
		{[]string{python, "-u"}, "with no script"},
		{[]string{python, "-I", script}, "-I makes the interpreter ignore PYTHONPATH"},
		{[]string{python, "-E", script}, "-E makes the interpreter ignore PYTHONPATH"},
		{[]string{python, "-uI", script}, "-I makes the interpreter ignore PYTHONPATH"},
		{[]string{python, "--", "-"}, "reads its script from stdin"},
		{[]string{python, "--"}, "reads its script from stdin"},
	} {
		_, err := ownloop.ParseCommand(tc.argv)
		if !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseCommand(%q) = %v, want one line wrapping ErrRefused that says %q", tc.argv, err, tc.want)
		}
	}
}

func TestParseCommandSplitsOptions(t *testing.T) {
	script := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(script, []byte("pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ownloop.ParseCommand([]string{python, "-u", "-X", "dev", script, "--epochs", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Options, " ") != "-u -X dev" || c.Script != script || strings.Join(c.Args, " ") != "--epochs 1" || c.Module || c.Name() != "train.py" {
		t.Errorf("ParseCommand = %+v", c)
	}
	// -- ends the interpreter's options, as Python reads it.
	d, err := ownloop.ParseCommand([]string{python, "-u", "--", script, "--epochs", "1"})
	if err != nil || strings.Join(d.Options, " ") != "-u" || d.Script != script || strings.Join(d.Args, " ") != "--epochs 1" {
		t.Errorf("ParseCommand(python -u -- script) = %+v, %v", d, err)
	}
	// -X's value is not a bundle of options: -Ximportant is no -I.
	if x, err := ownloop.ParseCommand([]string{python, "-XIE", script}); err != nil || strings.Join(x.Options, " ") != "-XIE" {
		t.Errorf("ParseCommand(python -XIE script) = %+v, %v", x, err)
	}
	m, err := ownloop.ParseCommand([]string{python, "-m", "pkg.train", "--lr", "0.1"})
	if err != nil || !m.Module || m.Script != "pkg.train" || strings.Join(m.Args, " ") != "--lr 0.1" {
		t.Errorf("ParseCommand(-m) = %+v, %v", m, err)
	}
}

//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/ownloop"
)

// wrapped copies testdata/wrapped.py (a loop over an iterable given to
// headspace_hook.wrap()) into a directory of the test's own.
func wrapped(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/wrapped.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "wrapped.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWrapAcrossEpochs: an iterable given to wrap() once, before the
// epochs (or again each epoch), is measured over as many epochs as the
// run needs: 5 batches an epoch, 12 steps from the iterable then 10 on
// the caches; every epoch, cached ones included, keeps its 5 batches;
// the loader is named as wrapped; its steps are taken to train (no torch
// backward pass: the run does not go on to look for another loop).
func TestWrapAcrossEpochs(t *testing.T) {
	needTorch(t)
	for _, each := range []bool{false, true} {
		script := wrapped(t)
		rec := filepath.Join(t.TempDir(), "epochs.txt")
		args := []string{"--record", rec}
		if each {
			args = append(args, "--wrap-each")
		}
		var out bytes.Buffer
		run, err := ownloop.Exec(context.Background(), command(t, script, args...), settings(12, 10), &out, nil)
		noneLeft(t, script)
		if err != nil {
			t.Fatalf("wrap-each %v: %v\n%s", each, err, out.String())
		}
		ld, ok := run.Target()
		if !ok || !ld.Wrapped || ld.Kind != "Batches" || run.Unsure {
			t.Errorf("wrap-each %v: loader %+v (unsure %v), want the wrapped Batches, taken to train", each, ld, run.Unsure)
		}
		phases := map[string]int{}
		for _, st := range run.Steps {
			phases[st.Phase]++
		}
		if phases["loader"]+phases["epoch"] < 11 || phases["cached"] == 0 || len(run.Steps) < 21 {
			t.Errorf("wrap-each %v: steps by phase %v, want 22 steps over epochs, from the iterable then cached", each, phases)
		}
		b, _ := os.ReadFile(rec)
		epochs := strings.Fields(string(b))
		if len(epochs) < 4 {
			t.Errorf("wrap-each %v: epochs %q, want at least 4 of 5 batches (22 steps)", each, epochs)
		}
		for _, n := range epochs {
			if n != "5" {
				t.Errorf("wrap-each %v: epochs of %q batches, want 5 each", each, epochs)
				break
			}
		}
	}
}

// TestWrapLadder: a wrapped loop's ladder runs host and none, and leaves
// sample and raw out with a line (there is no dataset to cache in);
// asked for by name they are refused.
func TestWrapLadder(t *testing.T) {
	needTorch(t)
	script := wrapped(t)
	c := ownloop.LadderConfig{Levels: []level.Level{level.Host, level.Sample, level.Raw, level.None}, Steps: 6, Count: 1, Loader: 1, FirstBatchTimeout: time.Minute, RawIfTorchvision: true}
	var got []string
	var out bytes.Buffer
	err := ownloop.Ladder(context.Background(), command(t, script), c, &out, func(p ownloop.LadderPoint) error {
		got = append(got, p.Level.String())
		return nil
	})
	noneLeft(t, script)
	if err != nil || strings.Join(got, ",") != "host,none" {
		t.Fatalf("Ladder: levels %v, %v; want host and none\n%s", got, err, out.String())
	}
	for _, l := range []string{"sample", "raw"} {
		if want := "headspace: level " + l + " left out: the training loop is an iterable given to headspace_hook.wrap()"; !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	c.Levels, c.RawIfTorchvision = []level.Level{level.Sample}, false
	err = ownloop.Ladder(context.Background(), command(t, script), c, &out, func(ownloop.LadderPoint) error { return nil })
	noneLeft(t, script)
	if want := "level sample needs a DataLoader's dataset; the training loop is an iterable given to wrap()"; !errors.Is(err, ownloop.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Errorf("level sample: %v, want refused: %s", err, want)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/gate"
)

// TestReplayPinned replays the four real A/A sessions of
// results/paired-aa at seed 1 and compares each report, byte for byte,
// with the one the gate printed before its medians moved from
// montanaflynn/stats to benchmath (internal/summary; issue 33): for
// these inputs the ratios, intervals and verdicts did not change.
// testdata/replay holds those reports (headspace gate --seed 1 --replay
// ../../results/paired-aa/sN, built at 9c967e3); issue 52 changed their
// closing lines alone (a verdict metric not sure no longer passes: each
// now ends "RERUN: not sure"), not a ratio, interval or verdict.
func TestReplayPinned(t *testing.T) {
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		t.Run(s, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "replay", "paired-aa-"+s+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			_ = replayGate(filepath.Join("..", "..", "results", "paired-aa", s), gate.PairedOptions{Seed: 1}, &got) // the exit status says rerun; the report is what is pinned
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("the replay of %s changed:\n%s\nwant:\n%s", s, got.Bytes(), want)
			}
		})
	}
}

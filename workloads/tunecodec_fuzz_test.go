package workloads

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// FuzzTuneCodec: whatever a file holds, TuneCodec decodes it without
// panicking, and a tune it decodes is of one count of ranks (none, or 1
// or more, on a script's records alone) that its records encode again:
// they decode to the same ranks, runs and best.
func FuzzTuneCodec(f *testing.F) {
	for _, name := range []string{"tune-ranks-d2c5995.txt", "tune-imagefolder-517e1ce.txt", "tune-ours-remote-a98e6c0.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "results", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("BenchmarkTune/script=t.py/stage=profile/workers=0/prefetch=0/pin=false/persistent=false/start=default/ranks=2 1 1 steps/s 2 cached-steps/s 0 startup-ns 0 cuda 1 pick-workers\n" +
		"BenchmarkTune/script=t.py/stage=best/workers=0/prefetch=0/pin=false/persistent=false/start=default/ranks=2 1 0 runs 0 stopped\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _, err := resultfile.Parse(bytes.NewReader(b), "fuzz.txt")
		if err != nil || len(recs) == 0 {
			return
		}
		r, err := TuneCodec.Decode(recs)
		if err != nil {
			return
		}
		if r.Profile.Ranks < 0 || (r.Profile.Ranks > 0 && r.Profile.Ours()) {
			t.Fatalf("decoded %d ranks of pipeline %q", r.Profile.Ranks, r.Profile.Pipeline)
		}
		back, err := TuneCodec.Decode(TuneCodec.Encode(r))
		if err != nil || back.Profile.Ranks != r.Profile.Ranks || len(back.Runs) != len(r.Runs) || back.Best != r.Best {
			t.Fatalf("re-encoded, decodes to %d ranks, %d runs, best %+v (%v); want %d, %d, %+v", back.Profile.Ranks, len(back.Runs), back.Best, err, r.Profile.Ranks, len(r.Runs), r.Best)
		}
	})
}

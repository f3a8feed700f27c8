package workloads

import (
	"slices"
	"testing"

	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestRealPeerSettingsAreItsFiles: the specification lines a RealPeer
// writes (Settings, between the command line and the images' lines) are
// those of the committed peer --peers files, in their order, for the
// experiment their command lines ask for: the file is the experiment's.
func TestRealPeerSettingsAreItsFiles(t *testing.T) {
	for _, tc := range []struct {
		file, peers string
		workers     []int
	}{
		{"../results/peers-emulated.txt", "all", []int{1, 2}},
		{"../results/peers-bucket-emulated.txt", "all-bucket", []int{1, 2}},
	} {
		recs, err := resultfile.Read(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		lines := fileSettings(recs[0])
		e := Sized[RealPeer](Default)
		if e.Peers, err = realpeer.ParseNames(tc.peers); err != nil {
			t.Fatal(err)
		}
		e.Workers = tc.workers
		want := e.Settings()
		i := slices.IndexFunc(lines, func(c resultfile.Config) bool { return c.Key == want[0].Key })
		if i < 0 || i+len(want) > len(lines) || !slices.Equal(lines[i:i+len(want)], want) {
			t.Errorf("%s: lines %v, want %v among them, in order", tc.file, lines, want)
		}
		if lines[i-1].Key != "command" || lines[i+len(want)].Key != "dataset" {
			t.Errorf("%s: Settings between %s and %s, want between command and dataset", tc.file, lines[i-1].Key, lines[i+len(want)].Key)
		}
	}
}

// TestRealPeerNotPortable: RealPeer needs the peers env, so it is
// registered so and is not in Experiments, which go test -bench runs on
// every machine; its sizes are the defaults peer --peers documents.
func TestRealPeerNotPortable(t *testing.T) {
	r, err := Find("RealPeer")
	if err != nil {
		t.Fatal(err)
	}
	if !r.PeersEnv || r.Portable() {
		t.Errorf("RealPeer registered with PeersEnv %v, Portable %v: want true, false", r.PeersEnv, r.Portable())
	}
	for _, e := range Experiments {
		if e.Name() == "RealPeer" {
			t.Error("RealPeer is in Experiments")
		}
	}
	d := Sized[RealPeer](Default)
	if d.Width != 512 || d.Job.Crop != 224 || d.Job.Batch != 32 || d.Job.Batches != 24 || d.Count != 3 || !slices.Equal(d.Workers, []int{2}) {
		t.Errorf("DefaultRealPeer %+v, want peer --help's: --workers 2, --raw-size 512, --crop 224, --batch 32, --batches 24, --count 3", d)
	}
}

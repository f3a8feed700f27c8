package workloads

import (
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestSPDLCacheLinesAreItsFile: the lines an SPDLCache at its Default
// size writes after the script's versions, the images' line among them
// (fileLines, of the committed file's images), are those of the
// committed peer --spdl-cache file, which ran at peer --spdl-cache's
// defaults, in their order: the file is the Default size's. Its
// Settings are the same lines without the images' line.
func TestSPDLCacheLinesAreItsFile(t *testing.T) {
	recs, err := resultfile.Read("../results/peers-spdl-cache.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := fileSettings(recs[0])
	i := slices.IndexFunc(lines, func(c resultfile.Config) bool { return c.Key == "workers" })
	if i < 1 || !strings.HasPrefix(lines[i-1].Key, "script-") {
		t.Fatalf("the file's lines %v: want workers after the script's versions", lines)
	}
	e := Sized[SPDLCache](Default)
	// 31 KiB an image, as the file says: the folder's bytes are its only
	// figure from the run.
	folder := &realpeer.Folder{Bytes: 31 * 1024 * int64(e.Config.Images())}
	got := e.fileLines(folder)
	if want := lines[i:]; !slices.Equal(got, want) {
		t.Errorf("fileLines:\n%v\nwant the file's\n%v", got, want)
	}
	s := e.Settings()
	if len(s) != len(got)-1 || slices.ContainsFunc(s, func(c resultfile.Config) bool { return c.Key == "dataset" }) {
		t.Errorf("Settings %v: want fileLines %v without the dataset line", s, got)
	}
}

// TestSPDLCacheNotPortable: SPDLCache needs the peers env, so it is
// registered so, under its records' name, and is not in Experiments,
// which go test -bench runs on every machine; both its sizes are
// side-by-sides the harness would run (spdlcache.Config.Validate).
func TestSPDLCacheNotPortable(t *testing.T) {
	r, err := Find("RealPeerHeadspace")
	if err != nil {
		t.Fatal(err)
	}
	if !r.PeersEnv || r.Portable() {
		t.Errorf("SPDLCache registered with PeersEnv %v, Portable %v: want true, false", r.PeersEnv, r.Portable())
	}
	for _, e := range Experiments {
		if _, ok := e.(SPDLCache); ok {
			t.Error("SPDLCache is in Experiments")
		}
	}
	for _, z := range []Size{Default, Quick} {
		if err := Sized[SPDLCache](z).Config.Validate(); err != nil {
			t.Errorf("size %d: %v", z, err)
		}
	}
}

package level

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestTable checks every level's row: what it caches, which stages still
// run and the stage a drop at it is attributed to.
func TestTable(t *testing.T) {
	for _, tc := range []struct {
		l      Level
		name   string
		runs   []string // of Load … Step
		stage  string
		loader bool
		onDisk bool
		remote bool
	}{
		{None, "none", []string{Load, Fetch, Decode, Transform, Collate, Batch, Upload, Step}, "raw data loading", true, false, false},
		{Local, "local", []string{Fetch, Decode, Transform, Collate, Batch, Upload, Step}, FetchStage, true, true, true},
		{Encoded, "encoded", []string{Decode, Transform, Collate, Batch, Upload, Step}, "decoding", true, true, false},
		{Raw, "raw", []string{Transform, Collate, Batch, Upload, Step}, "transforms", true, false, false},
		{Sample, "sample", []string{Collate, Batch, Upload, Step}, "batching (collate)", true, false, false},
		{Host, "host", []string{Upload, Step}, "host-to-device transfer", false, false, false},
		{Device, "device", []string{Step}, "model step", false, false, false},
	} {
		if tc.l.String() != tc.name || tc.l.Stage() != tc.stage || tc.l.Loader() != tc.loader || tc.l.OnDisk() != tc.onDisk || tc.l.Remote() != tc.remote || tc.l.Caches() == "" {
			t.Errorf("%d: %s %q loader %v on disk %v caches %q", int(tc.l), tc.l, tc.l.Stage(), tc.l.Loader(), tc.l.OnDisk(), tc.l.Caches())
		}
		for _, s := range []string{Load, Fetch, Decode, Transform, Collate, Batch, Upload, Step} {
			if got := tc.l.Runs(s); got != slices.Contains(tc.runs, s) {
				t.Errorf("%s runs %s = %v", tc.l, s, got)
			}
		}
		if got := tc.l.Runs("index"); got != tc.loader {
			t.Errorf("%s runs index = %v, want %v (a loader's bookkeeping)", tc.l, got, tc.loader)
		}
		if l, err := Parse(tc.name); err != nil || l != tc.l {
			t.Errorf("Parse(%q) = %v, %v", tc.name, l, err)
		}
	}
	if Level(9).Valid() || Level(9).String() != "Level(9)" || Level(-1).Runs(Step) {
		t.Error("Level(9) or Level(-1) is valid")
	}
	if !slices.Equal(Levels, []Level{None, Raw, Sample, Host, Device}) || !slices.Equal(OnDiskLevels, []Level{None, Encoded, Raw, Sample, Host, Device}) ||
		!slices.Equal(RemoteLevels, []Level{None, Local, Encoded, Raw, Sample, Host, Device}) {
		t.Errorf("Levels %v, OnDiskLevels %v, RemoteLevels %v", Levels, OnDiskLevels, RemoteLevels)
	}
}

func TestAttribution(t *testing.T) {
	for _, tc := range []struct {
		lo, above Level
		want      string
	}{
		{None, Encoded, FetchStage},
		{None, Local, NetworkStage},
		{Local, Encoded, FetchStage},
		{Local, Raw, "fetching + decoding"},
		{None, Raw, "raw data loading"},
		{Encoded, Raw, "decoding"},
		{None, Sample, "raw data loading + transforms"},
		{Raw, Device, "transforms + batching (collate) + host-to-device transfer"},
	} {
		if got := Between(tc.lo, tc.above); got != tc.want {
			t.Errorf("Between(%s, %s) = %q, want %q", tc.lo, tc.above, got, tc.want)
		}
	}
	for stage, want := range map[string]string{
		Load: "raw data loading", Fetch: FetchStage, Decode: "decoding", Transform: "transforms",
		Collate: "batching (collate)", Batch: "batching (collate)", "index": "index",
	} {
		if got := Attributed(stage); got != want {
			t.Errorf("Attributed(%q) = %q, want %q", stage, got, want)
		}
	}
}

func TestParseList(t *testing.T) {
	if _, err := ParseList("none,cpu"); err == nil || !strings.Contains(err.Error(), `unknown level "cpu" (want one of none, local, encoded, raw, sample, host, device)`) {
		t.Errorf("ParseList: %v", err)
	}
	if ls, err := ParseList("device, none,none"); err != nil || !slices.Equal(ls, []Level{Device, None}) {
		t.Errorf("ParseList = %v, %v", ls, err)
	}
}

func ExampleLevel_Runs() {
	fmt.Println(Raw, Raw.Runs(Decode), Raw.Runs(Transform), Raw.Stage())
	// Output: raw false true transforms
}

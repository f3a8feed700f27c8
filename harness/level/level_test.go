package level

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// every is the whole pipeline, in order, as the test spells it.
var every = []Stage{Load, Network, Fetch, Decode, Transform, Collate, Batch, Upload, Step}

// TestTable checks every level's row: its cut, what it caches, which
// stages still run, the stage a drop at it is attributed to and what it
// keeps of each source's pipeline.
func TestTable(t *testing.T) {
	for _, tc := range []struct {
		l      Level
		name   string
		cut    Stage
		runs   []Stage // of every
		stage  string
		needs  Source
		loader bool
		kept   map[Source]Stage // per source it runs on; none where absent
	}{
		{None, "none", Load, every, "raw data loading", Synthetic, true, map[Source]Stage{}},
		{Local, "local", Fetch, every[2:], FetchStage, Bucket, true, map[Source]Stage{Bucket: Network}},
		{Encoded, "encoded", Decode, every[3:], "decoding", Disk, true, map[Source]Stage{Disk: Fetch, Bucket: Fetch}},
		{Raw, "raw", Transform, every[4:], "transforms", Synthetic, true, map[Source]Stage{Synthetic: Load, Disk: Decode, Bucket: Decode}},
		{Sample, "sample", Collate, every[5:], "batching (collate)", Synthetic, true, map[Source]Stage{Synthetic: Transform, Disk: Transform, Bucket: Transform}},
		{Host, "host", Upload, every[7:], "host-to-device transfer", Synthetic, false, map[Source]Stage{Synthetic: Batch, Disk: Batch, Bucket: Batch}},
		{Device, "device", Step, every[8:], "model step", Synthetic, false, map[Source]Stage{Synthetic: Upload, Disk: Upload, Bucket: Upload}},
	} {
		l := tc.l
		if l.String() != tc.name || l.Cut() != tc.cut || l.Stage() != tc.stage || l.Needs() != tc.needs || l.Loader() != tc.loader || l.Caches() == "" {
			t.Errorf("%d: %s cut %s %q needs %s loader %v caches %q", int(l), l, l.Cut(), l.Stage(), l.Needs(), l.Loader(), l.Caches())
		}
		if l.OnDisk() != (tc.needs >= Disk) || l.Remote() != (tc.needs == Bucket) {
			t.Errorf("%s: on disk %v, remote %v", l, l.OnDisk(), l.Remote())
		}
		for _, s := range every {
			if got := l.Runs(s); got != slices.Contains(tc.runs, s) {
				t.Errorf("%s runs %s = %v", l, s, got)
			}
		}
		if got := l.Runs("index"); got != tc.loader {
			t.Errorf("%s runs index = %v, want %v (a loader's bookkeeping)", l, got, tc.loader)
		}
		for src := Synthetic; src <= Bucket; src++ {
			want, wantOK := tc.kept[src]
			if got, ok := l.Kept(src); got != want || ok != wantOK {
				t.Errorf("%s keeps of %s %q, %v; want %q, %v", l, src, got, ok, want, wantOK)
			}
		}
		if got, err := Parse(tc.name); err != nil || got != l {
			t.Errorf("Parse(%q) = %v, %v", tc.name, got, err)
		}
	}
	if Level(9).Valid() || Level(9).String() != "Level(9)" || Level(-1).Runs(Step) || Level(9).Cut() != "" {
		t.Error("Level(9) or Level(-1) is valid")
	}
	if !slices.Equal(For(Synthetic), []Level{None, Raw, Sample, Host, Device}) || !slices.Equal(For(Disk), []Level{None, Encoded, Raw, Sample, Host, Device}) ||
		!slices.Equal(For(Bucket), []Level{None, Local, Encoded, Raw, Sample, Host, Device}) {
		t.Errorf("For(synthetic) %v, For(disk) %v, For(bucket) %v", For(Synthetic), For(Disk), For(Bucket))
	}
	if d := Descending(Document); !slices.Equal(d, []Level{Device, Host, Sample, Raw, None}) || Document[0] != None {
		t.Errorf("Descending(Document) = %v, Document %v", d, Document)
	}
}

// TestDefault checks the default sweeps: the document's five, with
// encoded on disk and local in a bucket; and that they are lists of their
// own, not read off the table: a level added to the table (here appended
// after device, so the constants keep their rows) joins For and Parse's
// names but neither Document nor any Default.
func TestDefault(t *testing.T) {
	want := map[Source][]Level{
		Synthetic: {None, Raw, Sample, Host, Device},
		Disk:      {None, Encoded, Raw, Sample, Host, Device},
		Bucket:    {None, Local, Encoded, Raw, Sample, Host, Device},
	}
	check := func(when string) {
		t.Helper()
		if !slices.Equal(Document, want[Synthetic]) {
			t.Errorf("%s: Document = %v", when, Document)
		}
		for src, w := range want {
			if got := Default(src); !slices.Equal(got, w) {
				t.Errorf("%s: Default(%s) = %v, want %v", when, src, got, w)
			}
		}
	}
	check("the table")
	var adds []string
	for _, l := range Document {
		adds = append(adds, l.StageIn(Document))
	}
	if got := strings.Join(adds, "; "); got != "raw data loading; transforms; batching (collate); host-to-device transfer; model step" {
		t.Errorf("the document's levels add %s", got)
	}
	if Default(Source(3)) != nil {
		t.Error("Default(Source(3)) is not nil")
	}
	Default(Synthetic)[0] = Device // a copy: the caller's to change
	all := For(Synthetic)
	extra := Level(len(table))
	defer withRow(extra, row{"slots", Batch, Synthetic, "one batch's slots, filled"})()
	if got := For(Synthetic); !slices.Equal(got, append(all, extra)) {
		t.Fatalf("with a row added, For(synthetic) = %v", got)
	}
	if l, err := ParseList("slots,none"); err != nil || !slices.Equal(l, []Level{extra, None}) {
		t.Errorf("with a row added, ParseList(slots,none) = %v, %v", l, err)
	}
	check("a row added")
}

func TestStageIn(t *testing.T) {
	ls := []Level{Device, None, Sample} // in any order
	for l, want := range map[Level]string{
		None:   "raw data loading + transforms",
		Sample: "batching (collate) + host-to-device transfer",
		Device: "model step",
		Raw:    "transforms", // not in ls: what it adds over sample
	} {
		if got := l.StageIn(ls); got != want {
			t.Errorf("%s.StageIn(%v) = %q, want %q", l, ls, got, want)
		}
	}
	if got := Encoded.StageIn(nil); got != Encoded.Stage() {
		t.Errorf("Encoded.StageIn(nil) = %q, want its Stage %q", got, Encoded.Stage())
	}
}

// TestCut checks the cut itself, for every level of the table: it runs
// exactly the stages from its cut on, so each level up runs a suffix of
// the one below it, and what it keeps is the stage just before the cut.
func TestCut(t *testing.T) {
	for i, l := range For(Bucket) {
		k := slices.Index(every, l.Cut())
		if k < 0 {
			t.Fatalf("%s: cut %q is no stage", l, l.Cut())
		}
		for j, s := range every {
			if l.Runs(s) != (j >= k) {
				t.Errorf("%s (cut %s) runs %s = %v", l, l.Cut(), s, l.Runs(s))
			}
		}
		if prev := Level(i - 1); i > 0 && slices.Index(every, prev.Cut()) >= k {
			t.Errorf("%s cuts at %s, not after %s's %s", l, l.Cut(), prev, prev.Cut())
		}
		for src := l.Needs(); src <= Bucket; src++ {
			kept, ok := l.Kept(src)
			stages := Stages(src)
			if !ok {
				if l.Runs(stages[0]) {
					continue
				}
				t.Errorf("%s keeps nothing of %s, yet skips %s", l, src, stages[0])
				continue
			}
			if next := stages[slices.Index(stages, kept)+1]; l.Runs(kept) || !l.Runs(next) {
				t.Errorf("%s keeps %s of %s: runs it %v, runs the next (%s) %v", l, kept, src, l.Runs(kept), next, l.Runs(next))
			}
		}
	}
	for src, want := range map[Source][]Stage{
		Synthetic: {Load, Transform, Collate, Batch, Upload, Step},
		Disk:      {Fetch, Decode, Transform, Collate, Batch, Upload, Step},
		Bucket:    {Network, Fetch, Decode, Transform, Collate, Batch, Upload, Step},
	} {
		if got := Stages(src); !slices.Equal(got, want) {
			t.Errorf("Stages(%s) = %v, want %v", src, got, want)
		}
	}
	if !slices.Equal(SampleStages, []Stage{Load, Fetch, Decode, Transform}) {
		t.Errorf("SampleStages = %v", SampleStages)
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
		{Sample, Host, "batching (collate)"},
		{None, Level(9), "?"},
	} {
		if got := Between(tc.lo, tc.above); got != tc.want {
			t.Errorf("Between(%s, %s) = %q, want %q", tc.lo, tc.above, got, tc.want)
		}
	}
	for stage, want := range map[Stage]string{
		Load: "raw data loading", Network: NetworkStage, Fetch: FetchStage, Decode: "decoding", Transform: "transforms",
		Collate: "batching (collate)", Batch: "batching (collate)", Upload: "host-to-device transfer", Step: "model step", "index": "index",
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

// TestJSON checks that the table's JSON reads back as Describe, and that
// a level's runs and kept stages are the table's own.
func TestJSON(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got Table
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Pipeline) != len(every) || len(got.Levels) != len(table) {
		t.Fatalf("%d stages and %d levels, want %d and %d", len(got.Pipeline), len(got.Levels), len(every), len(table))
	}
	for i, l := range For(Bucket) {
		r := got.Levels[i]
		if r.Name != l.String() || r.Cut != l.Cut() || r.Runs[0] != l.Cut() || r.Stage != l.Stage() || r.Needs != l.Needs().String() {
			t.Errorf("level %d: %+v", i, r)
		}
		if k, ok := l.Kept(Bucket); ok != (r.Kept["bucket"] != "") || k != r.Kept["bucket"] {
			t.Errorf("%s keeps %q of a bucket, the JSON %q", l, k, r.Kept["bucket"])
		}
	}
}

func ExampleLevel_Runs() {
	fmt.Println(Raw, Raw.Cut(), Raw.Runs(Decode), Raw.Runs(Transform), Raw.Stage())
	// Output: raw transform false true transforms
}

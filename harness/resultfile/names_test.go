package resultfile

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

var testLayout = Layout{Owner: "Test", Keys: map[string][]string{
	"Test":         {"impl", "workers"},
	"TestLimit":    {"workers"},
	"Test/profile": {"cores"},
}, Optional: map[string][]string{"TestLimit": {"workers"}}}

// TestLayoutRead: a name of the layout reads as its benchmark and keys;
// another benchmark's, a key missing, a key of another benchmark, a key
// twice, a part more or a GOMAXPROCS suffix the layout has not are
// refused, naming the record and the owner.
func TestLayoutRead(t *testing.T) {
	procs := testLayout
	procs.Procs = true
	for _, tc := range []struct {
		layout Layout
		name   string
		want   Name
		err    string
	}{
		{testLayout, "Test/impl=torch/workers=2", Name{Benchmark: "Test", Keys: map[string]string{"impl": "torch", "workers": "2"}, Procs: 1}, ""},
		{testLayout, "Test/workers=2/impl=torch", Name{Benchmark: "Test", Keys: map[string]string{"impl": "torch", "workers": "2"}, Procs: 1}, ""},
		{testLayout, "TestLimit", Name{Benchmark: "TestLimit", Keys: map[string]string{}, Procs: 1}, ""},
		{testLayout, "Test/profile/cores=4", Name{Benchmark: "Test/profile", Keys: map[string]string{"cores": "4"}, Procs: 1}, ""},
		{procs, "Test/impl=torch/workers=2-16", Name{Benchmark: "Test", Keys: map[string]string{"impl": "torch", "workers": "2"}, Procs: 16}, ""},
		{testLayout, "Other/impl=torch/workers=2", Name{}, "BenchmarkOther/impl=torch/workers=2: not a record of Test (its benchmarks: Test, Test/profile, TestLimit)"},
		{testLayout, "Test/workers=2", Name{}, "BenchmarkTest/workers=2: a record of Test without its key impl"},
		{testLayout, "TestLimit/impl=torch", Name{}, "a record of Test with a key impl its TestLimit records do not have"},
		{testLayout, "Test/impl=torch/impl=fast/workers=2", Name{}, "a record of Test with its key impl twice"},
		{testLayout, "Test/impl=torch/workers=2/x=1", Name{}, "a record of Test with a part of its name more (/x=1)"},
		{testLayout, "Test/impl=torch/workers=2-16", Name{}, "a record of Test with a part of its name more (-16)"},
		{testLayout, "Test/check/cores=4", Name{}, "a record of Test with a key cores its Test records do not have"},
	} {
		got, err := tc.layout.Read(&benchfmt.Result{Name: benchfmt.Name(tc.name)})
		if other := strings.Contains(tc.err, "not a record"); errors.Is(err, ErrNotOurs) != other {
			t.Errorf("%s: %v: errors.Is ErrNotOurs %v, want %v", tc.name, err, !other, other)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %+v, %v; want an error containing %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.Benchmark != tc.want.Benchmark || got.Procs != tc.want.Procs || !maps.Equal(got.Keys, tc.want.Keys) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestNameCount: a count key reads as a whole number, positive where
// asked; another value is an error naming the key and the value.
func TestNameCount(t *testing.T) {
	n := Name{Keys: map[string]string{"workers": "0", "cores": "4", "bad": "x"}}
	if c, err := n.Count("cores", true); c != 4 || err != nil {
		t.Errorf("cores: %d, %v", c, err)
	}
	if c, err := n.Count("workers", false); c != 0 || err != nil {
		t.Errorf("workers, 0 allowed: %d, %v", c, err)
	}
	if _, err := n.Count("workers", true); err == nil || err.Error() != `workers "0": want a positive count` {
		t.Errorf("workers, positive: %v", err)
	}
	if _, err := n.Count("bad", false); err == nil || err.Error() != `bad "x": want a count` {
		t.Errorf("bad: %v", err)
	}
}

// FuzzLayoutRead: a name Read accepts, written again from what it read
// (the benchmark, then the keys in the layout's order), reads the same.
func FuzzLayoutRead(f *testing.F) {
	f.Add("Test/impl=torch/workers=2", false)
	f.Add("Test/profile/cores=4-2", true)
	f.Add("TestLimit/workers=1/workers=2", false)
	f.Fuzz(func(t *testing.T, name string, procs bool) {
		l := testLayout
		l.Procs = procs
		n, err := l.Read(&benchfmt.Result{Name: benchfmt.Name(name)})
		if err != nil {
			return
		}
		again := n.Benchmark
		for _, k := range l.Keys[n.Benchmark] {
			if v, ok := n.Keys[k]; ok {
				again += "/" + k + "=" + v
			}
		}
		if n.Procs != 1 {
			again = BenchName(again, n.Procs)
		}
		back, err := l.Read(&benchfmt.Result{Name: benchfmt.Name(again)})
		if err != nil || back.Benchmark != n.Benchmark || back.Procs != n.Procs || !maps.Equal(back.Keys, n.Keys) {
			t.Fatalf("%q read %+v; written again %q: %+v, %v", name, n, again, back, err)
		}
	})
}

// TestTrimProcs: a name's GOMAXPROCS suffix comes off, its count
// returned; a name without one is itself.
func TestTrimProcs(t *testing.T) {
	for _, tc := range []struct{ name, rest, procs string }{
		{"BenchmarkLadder/level=raw/workers=4-16", "BenchmarkLadder/level=raw/workers=4", "16"},
		{"Ladder/level=raw/workers=4", "Ladder/level=raw/workers=4", ""},
		{"WhatIf/profile/cores=2-2", "WhatIf/profile/cores=2", "2"},
		{"Sim-8", "Sim", "8"},
	} {
		if rest, procs := TrimProcs(benchfmt.Name(tc.name)); rest != tc.rest || procs != tc.procs {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, rest, procs, tc.rest, tc.procs)
		}
	}
}

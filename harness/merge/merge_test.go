package merge

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The test sweep: four points, two shards (every other point), two runs
// of each; "shards" describes the sharding.
var testPlan = Plan{
	Points: []string{"Sweep/p=a", "Sweep/p=b", "Sweep/p=c", "Sweep/p=d"},
	Shard:  []int{0, 1, 0, 1},
	Shards: 2,
	Count:  2,
	Keys:   []string{"shards"},
}

func planner(config map[string]string) (Plan, error) {
	if config["shards"] != "2" {
		return Plan{}, fmt.Errorf("no shards line")
	}
	return testPlan, nil
}

var baseConfig = []resultfile.Config{{Key: "cpu", Value: "EPYC"}, {Key: "cores", Value: "16"}, {Key: "commit", Value: "abc"}, {Key: "steps", Value: "4"}, {Key: "shards", Value: "2"}}

// res is a run of point p (with a GOMAXPROCS suffix, as files hold them)
// under baseConfig changed by set ("key=value"; "key=" drops the key).
func res(p string, v float64, set ...string) *benchfmt.Result {
	cfg := slices.Clone(baseConfig)
	for _, s := range set {
		k, val, _ := strings.Cut(s, "=")
		i := slices.IndexFunc(cfg, func(c resultfile.Config) bool { return c.Key == k })
		switch {
		case i < 0:
			cfg = append(cfg, resultfile.Config{Key: k, Value: val})
		case val == "":
			cfg = slices.Delete(cfg, i, i+1)
		default:
			cfg[i].Value = val
		}
	}
	r := &benchfmt.Result{Name: benchfmt.Name("Sweep/p=" + p + "-16"), Iters: 1, Values: []benchfmt.Value{{Value: v, Unit: "steps/s"}}}
	for _, c := range cfg {
		r.Config = append(r.Config, benchfmt.Config{Key: c.Key, Value: []byte(c.Value), File: true})
	}
	return r
}

// runs is n runs of each point.
func runs(n int, points ...string) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, p := range points {
		for i := range n {
			out = append(out, res(p, float64(i+1)))
		}
	}
	return out
}

func TestMergeRefuses(t *testing.T) {
	complete := func() []Shard {
		return []Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", runs(2, "b", "d")}}
	}
	replace := func(i, j int, r *benchfmt.Result) []Shard {
		s := complete()
		s[i].Results[j] = r
		return s
	}
	for _, tc := range []struct {
		name   string
		shards []Shard
		want   []string // in the one-line error
	}{
		{"no files", nil, []string{"no shard files"}},
		{"empty file", []Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", nil}}, []string{"s1.txt holds no benchmark results"}},
		{"another cpu", replace(1, 3, res("d", 2, "cpu=Xeon")),
			[]string{"different machines", `cpu: "EPYC" in s0.txt, "Xeon" in s1.txt`}},
		{"another core count", replace(1, 0, res("b", 1, "cores=8")),
			[]string{"different machines", `cores: "16" in s0.txt, "8" in s1.txt`}},
		{"another setup", replace(1, 0, res("b", 1, "steps=8")),
			[]string{"different setups", `steps: "4" in s0.txt, "8" in s1.txt`}},
		{"another commit", replace(0, 2, res("c", 1, "commit=def")),
			[]string{"different setups", `commit: "abc" in s0.txt, "def" in s0.txt`}},
		{"a key only in one", replace(1, 1, res("b", 2, "pinned=true")),
			[]string{`pinned: not in s0.txt, "true" in s1.txt`}},
		{"a key missing in one", replace(1, 1, res("b", 2, "steps=")),
			[]string{`steps: "4" in s0.txt, not in s1.txt`}},
		{"machine and setup", replace(1, 1, res("b", 2, "cpu=Xeon", "steps=8")),
			[]string{"different machines (cpu:", "and the shards have different setups (steps:"}},
		{"same file twice", []Shard{{"s0.txt", runs(2, "a", "c")}, {"s0.txt", runs(2, "a", "c")}},
			[]string{"duplicate shard: s0.txt is given twice"}},
		{"a point in two files", []Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", runs(2, "b", "d")}, {"rerun.txt", runs(1, "c")}},
			[]string{"duplicate points", "Sweep/p=c in s0.txt and rerun.txt"}},
		{"more runs than the count", []Shard{{"s0.txt", runs(3, "a", "c")}, {"s1.txt", runs(2, "b", "d")}},
			[]string{"duplicate points", "Sweep/p=a has more than the sweep's 2 runs in s0.txt", "Sweep/p=c has more"}},
		{"no point of the sweep", replace(0, 0, res("z", 1)),
			[]string{"s0.txt holds Sweep/p=z, which is no point of the sweep"}},
		{"a shard missing", complete()[:1],
			[]string{"2 of 4 points missing", "Sweep/p=b (shard 1/2), Sweep/p=d (shard 1/2)", "--partial"}},
		{"a point short of runs", []Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", append(runs(2, "b"), runs(1, "d")...)}},
			[]string{"1 of 4 points missing or short of runs", "Sweep/p=d (1 of 2 runs, shard 1/2)"}},
		{"no plan", []Shard{{"s0.txt", []*benchfmt.Result{res("a", 1, "shards=")}}},
			[]string{"s0.txt: no shards line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Merge(tc.shards, planner, false)
			if err == nil {
				t.Fatalf("merged %d results; want an error", len(m.Results))
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
		})
	}
}

func TestMergeJoins(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shards  []Shard
		partial bool
		want    []string // point order of the results
		line    string   // the partial line, "" for none
	}{
		{"two shards", []Shard{{"s1.txt", runs(2, "b", "d")}, {"s0.txt", runs(2, "a", "c")}}, false,
			[]string{"a", "a", "b", "b", "c", "c", "d", "d"}, ""},
		{"one file both shards took turns in", []Shard{{"shared.txt", append(runs(2, "a", "c"), runs(2, "b", "d")...)}}, false,
			[]string{"a", "a", "b", "b", "c", "c", "d", "d"}, ""},
		{"partial: a shard missing", []Shard{{"s0.txt", runs(2, "a", "c")}}, true,
			[]string{"a", "a", "c", "c"}, "2 of 4 points missing or short of runs: Sweep/p=b, Sweep/p=d"},
		{"partial: short of runs", []Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", append(runs(2, "b"), runs(1, "d")...)}}, true,
			[]string{"a", "a", "b", "b", "c", "c", "d"}, "1 of 4 points missing or short of runs: Sweep/p=d (1 of 2 runs)"},
		{"partial when complete", []Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", runs(2, "b", "d")}}, true,
			[]string{"a", "a", "b", "b", "c", "c", "d", "d"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Merge(tc.shards, planner, tc.partial)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range m.Results {
				got = append(got, strings.TrimSuffix(strings.TrimPrefix(string(r.Name), "Sweep/p="), "-16"))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("results %v, want %v", got, tc.want)
			}
			want := slices.DeleteFunc(slices.Clone(baseConfig), func(c resultfile.Config) bool { return c.Key == "shards" })
			if tc.line != "" {
				want = append(want, resultfile.Config{Key: PartialKey, Value: tc.line})
			}
			if !slices.Equal(m.Config, want) {
				t.Errorf("config %v, want %v", m.Config, want)
			}
			if m.Points != 4 {
				t.Errorf("Points %d, want 4", m.Points)
			}
		})
	}
}

// A long list is cut, so a partial line stays one readable line.
func TestMergeListsAtMost(t *testing.T) {
	var names []string
	for i := range maxListed + 5 {
		names = append(names, fmt.Sprintf("Sweep/p=%d", i))
	}
	many := func(config map[string]string) (Plan, error) {
		return Plan{Points: names, Shard: make([]int, len(names)), Shards: 1, Count: 1}, nil
	}
	_, err := Merge([]Shard{{"s.txt", runs(1, "0")}}, many, false)
	if err == nil || !strings.HasSuffix(err.Error(), "and 4 more") {
		t.Errorf("error %v; want the list cut with \"and 4 more\"", err)
	}
	_, err = Merge([]Shard{{"s.txt", runs(1, "0")}}, func(map[string]string) (Plan, error) { return Plan{}, errors.New("bad plan") }, true)
	if err == nil || err.Error() != "s.txt: bad plan" {
		t.Errorf("error %v; want the planner's, naming the file", err)
	}
}

// Shards that differ only in the lines that describe their session
// (resultfile.SessionKeys) are one sweep: a busy machine sets machine-busy
// in one shard and not another, or with another pressure. The merged
// file keeps each shard's line.
func TestMergeKeepsSessionLines(t *testing.T) {
	busy := func(v string, points ...string) []*benchfmt.Result {
		var out []*benchfmt.Result
		for _, p := range points {
			for i := range 2 {
				out = append(out, res(p, float64(i+1), resultfile.BusyKey+"="+v))
			}
		}
		return out
	}
	dated := func(d string, points ...string) []*benchfmt.Result {
		var out []*benchfmt.Result
		for _, p := range points {
			for i := range 2 {
				out = append(out, res(p, float64(i+1), resultfile.DateKey+"="+d))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		shards []Shard
		want   []resultfile.Config // session lines of the merged file
	}{
		{"busy at different pressures",
			[]Shard{{"dir/s0.txt", busy("cpu pressure 59% after waiting 30s", "a", "c")}, {"dir/s1.txt", busy("cpu pressure 98% after waiting 30s", "b", "d")}},
			[]resultfile.Config{{Key: resultfile.BusyKey, Value: "s0.txt: cpu pressure 59% after waiting 30s; s1.txt: cpu pressure 98% after waiting 30s"}}},
		{"one shard busy",
			[]Shard{{"s0.txt", runs(2, "a", "c")}, {"s1.txt", busy("cpu pressure 98% after waiting 30s", "b", "d")}},
			[]resultfile.Config{{Key: resultfile.BusyKey, Value: "s1.txt: cpu pressure 98% after waiting 30s"}}},
		{"both busy alike",
			[]Shard{{"s0.txt", busy("cpu pressure 70% after waiting 30s", "a", "c")}, {"s1.txt", busy("cpu pressure 70% after waiting 30s", "b", "d")}},
			[]resultfile.Config{{Key: resultfile.BusyKey, Value: "cpu pressure 70% after waiting 30s"}}},
		{"dates: the earliest",
			[]Shard{{"s0.txt", dated("2026-11-27T10:00:00Z", "a", "c")}, {"s1.txt", dated("2026-11-27T09:59:00Z", "b", "d")}},
			[]resultfile.Config{{Key: resultfile.DateKey, Value: "2026-11-27T09:59:00Z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Merge(tc.shards, planner, false)
			if err != nil {
				t.Fatalf("shards that differ only in their session lines refused: %v", err)
			}
			want := slices.DeleteFunc(slices.Clone(baseConfig), func(c resultfile.Config) bool { return c.Key == "shards" })
			want = append(want, tc.want...)
			if !slices.Equal(m.Config, want) {
				t.Errorf("config\n%v, want\n%v", m.Config, want)
			}
		})
	}
}

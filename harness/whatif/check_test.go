package whatif

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// checks is a made-up verification of synthetic(): predictions with runs
// that are right, 10% slow, 50% slow and 25% fast.
func checks(p Profile) []Check {
	mk := func(s Scenario, factor float64, others float64) Check {
		pr := p.Predict(s)
		return Check{Predicted: pr, Runs: []float64{pr.StepsPerSec / factor * 0.99, pr.StepsPerSec / factor, pr.StepsPerSec / factor * 1.01}, Neighbours: []float64{others}}
	}
	return []Check{
		mk(Scenario{Cores: 8, Workers: 8}, 1, 0),                   // step-bound, right
		mk(Scenario{Cores: 2, Workers: 4}, 1.1, 0),                 // cores, 10% optimistic
		mk(Scenario{Cores: 2, Workers: 2}, 1.5, 1.2),               // cores, neighbours changed
		mk(Scenario{Cores: 8, Workers: 1}, 1.5, 0),                 // transform workers, optimistic
		mk(Scenario{Cores: 1, Workers: 1, StepScale: 0.5}, 0.8, 0), // pessimistic at fewer cores
	}
}

func TestCheckErrors(t *testing.T) {
	p := synthetic()
	cs := checks(p)
	want := []float64{0, 0.1, 0.5, 0.5, -0.2}
	for i, c := range cs {
		if !near(math.Round(c.Error()*1e6)/1e6, want[i]) {
			t.Errorf("check %d: error %v, want %v", i, c.Error(), want[i])
		}
		if why := c.Why(p); (why != "") != (math.Abs(want[i]) > Threshold) {
			t.Errorf("check %d (error %v): reason %q", i, want[i], why)
		}
	}
	if why := cs[2].Why(p); !strings.Contains(why, "other processes kept 1.20 cores") {
		t.Errorf("neighbours' change not named: %q", why)
	}
	if why := cs[3].Why(p); !strings.Contains(why, "transform's workers") {
		t.Errorf("workers' reason: %q", why)
	}
	med, worst := Errors(cs)
	if !near(math.Round(med*1e6)/1e6, 0.2) || !near(math.Round(worst*1e6)/1e6, 0.5) {
		t.Errorf("Errors = %v, %v; want 0.2, 0.5", med, worst)
	}
	if m, w := Errors(nil); !math.IsNaN(m) || !math.IsNaN(w) {
		t.Errorf("Errors(nil) = %v, %v", m, w)
	}
	if e := (Check{}).Error(); !math.IsNaN(e) {
		t.Errorf("error without runs %v", e)
	}
}

// TestGolden checks the text and Markdown formats against testdata
// (go test -update rewrites them).
func TestGolden(t *testing.T) {
	p := synthetic()
	p.Upload, p.Measured, p.CPUs, p.Used, p.Growth, p.Neighbours = 2*ms, 30, 2, 1.8, 0.1, 0.3
	g := Grid{Cores: []int{1, 2, 4}, Workers: []int{1, 4}, StepScales: []float64{0.5, 1}}
	var text, md bytes.Buffer
	for _, err := range []error{WriteProfile(&text, p), WriteTable(&text, p, g), WriteNeeds(&text, p, Scenario{}), WriteChecks(&text, p, checks(p)),
		WriteMarkdown(&md, p, g, checks(p), "headspace whatif --verify")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, got := range map[string][]byte{"whatif.txt": text.Bytes(), "whatif.md": md.Bytes()} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
		}
	}
}

func TestSavePlot(t *testing.T) {
	dir := t.TempDir()
	p := synthetic()
	for _, name := range []string{"a.png", "a.svg"} {
		path := filepath.Join(dir, name)
		if err := SavePlot(path, p, []int{1, 4}, 8, 1, checks(p)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 100 {
			t.Fatalf("%s: %d bytes, %v", name, len(b), err)
		}
		if name == "a.png" && !bytes.HasPrefix(b, []byte("\x89PNG")) || name == "a.svg" && !bytes.Contains(b[:200], []byte("<svg")) {
			t.Errorf("%s is not a %s", name, filepath.Ext(name))
		}
	}
	if err := SavePlot(filepath.Join(dir, "a.gif"), p, []int{1}, 4, 1, nil); err == nil {
		t.Error("a .gif plot accepted")
	}
	if _, err := Plot(p, nil, 4, 1, nil); err == nil {
		t.Error("a plot without worker counts accepted")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files left in the directory, want the 2 plots", len(ents))
	}
}

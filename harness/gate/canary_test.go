package gate

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// Clopper–Pearson bounds against values computed independently: the
// zero-failure bound 1 − (α/2)^(1/n) in closed form, and R's
// binom.test(k, n)$conf.int.
func TestClopperPearson(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 183, 0, 1 - math.Pow(0.025, 1.0/183)}, // 1.996%: docs/gate.md's 183 sessions
		{0, 6, 0, 1 - math.Pow(0.025, 1.0/6)},
		{6, 6, math.Pow(0.025, 1.0/6), 1},
		{4, 8, 0.1570128, 0.8429872},
		{1, 20, 0.001265, 0.248733},
	} {
		lo, hi := ClopperPearson(tc.k, tc.n, 0.95)
		if math.Abs(lo-tc.lo) > 1e-5 || math.Abs(hi-tc.hi) > 1e-5 {
			t.Errorf("%d of %d: [%.6f, %.6f], want [%.6f, %.6f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// Canaries are read from ci/aa-paired.sh's tables and from canary
// records in result files, anywhere under the paths given.
func TestReadCanaries(t *testing.T) {
	dir := t.TempDir()
	tsv := "session\tslowdown\tdisturbance\tpaired_exit\tfile_exit\n1\taa\tnone\t0\t0\n2\taa\tnone\t3\t0\n3\t0.10\tnone\t1\t3\n4\t0.10\tnone\t0\t3\n"
	if err := os.WriteFile(filepath.Join(dir, "sessions.tsv"), []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	night := filepath.Join(dir, "store", "machine")
	os.MkdirAll(night, 0o755)
	var b bytes.Buffer
	w := benchfmt.NewWriter(&b)
	slower := Outcome{Rounds: make([]Round, 16), Report: PairedReport{Rows: []PairedRow{{Verdict: true, Decision: Slower}}}}
	for _, r := range []*benchfmt.Result{CanaryRecord(0.10, slower), CanaryRecord(0, Outcome{Rounds: make([]Round, 8)})} {
		r.Config = []benchfmt.Config{{Key: "commit", Value: []byte("abc"), File: true}}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(night, "20261127T000000Z.txt"), b.Bytes(), 0o644)
	os.WriteFile(filepath.Join(night, "other.txt"), []byte("commit: abc\n\nBenchmarkLadder/level=raw-2 1 5 ns/op\n"), 0o644)

	cs, err := ReadCanaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	rates := CanaryRates(cs, 0.95)
	got := ""
	for _, r := range rates {
		got += strings.TrimSpace(strings.Join([]string{fmtF(r.Slowdown), itoa(r.Sessions), itoa(r.Failed), itoa(r.Rerun)}, " ")) + "; "
	}
	if want := "0 3 0 1; 0.1 3 2 0; "; got != want {
		t.Errorf("rates (slowdown sessions failed rerun) %q, want %q", got, want)
	}
	var text bytes.Buffer
	if err := WriteCanaryText(&text, cs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6 canary sessions of the paired gate from 2 files", "A/A ", "+10% ", "66.7%", "false failures (target ≤ 2%)", "power (target ≥ 90%)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report does not say %q:\n%s", want, text.String())
		}
	}

	for name, bad := range map[string]string{
		"no column":    "session\tslowdown\n1\taa\n",
		"bad exit":     "session\tslowdown\tpaired_exit\n1\taa\t2\n",
		"bad slowdown": "session\tslowdown\tpaired_exit\n1\tlots\t0\n",
		"NaN slowdown": "session\tslowdown\tpaired_exit\n1\tNaN\t0\n",
		"Inf slowdown": "session\tslowdown\tpaired_exit\n1\t+Inf\t0\n",
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "sessions.tsv"), []byte(bad), 0o644)
		if _, err := ReadCanaries(d); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line", name, err)
		}
	}
	for _, bad := range []string{"NaN", "Inf", "-0.1"} {
		d := t.TempDir()
		rec := "commit: abc\n\nBenchmark" + CanaryBenchmark + "/slowdown=" + bad + "-2 1 5 ns/op\n"
		os.WriteFile(filepath.Join(d, "night.txt"), []byte(rec), 0o644)
		if _, err := ReadCanaries(d); err == nil || !strings.Contains(err.Error(), "want "+CanaryBenchmark+"/slowdown=FRACTION") {
			t.Errorf("a canary record at slowdown=%s: error %v", bad, err)
		}
	}
	if _, err := ReadCanaries(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no canary session") {
		t.Errorf("an empty folder: error %v", err)
	}
}

func fmtF(f float64) string { return fmt.Sprint(f) }

func itoa(n int) string { return fmt.Sprint(n) }

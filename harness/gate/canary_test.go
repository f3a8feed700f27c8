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
	tsv := "session\tslowdown\tdisturbance\tpaired_exit\tfile_exit\tnot_sure\n1\taa\tnone\t0\t0\t0\n2\taa\tnone\t3\t0\t1\n3\t0.10\tnone\t1\t3\t0\n4\t0.10\tnone\t0\t3\n"
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
		got += strings.TrimSpace(strings.Join([]string{fmtF(r.Slowdown), itoa(r.Sessions), itoa(r.Passed), itoa(r.Failed), itoa(r.Rerun), itoa(r.NotSure)}, " ")) + "; "
	}
	if want := "0 3 2 0 1 1; 0.1 3 1 2 0 0; "; got != want {
		t.Errorf("rates (slowdown sessions passed failed rerun not-sure) %q, want %q", got, want)
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
		"no column":        "session\tslowdown\n1\taa\n",
		"bad exit":         "session\tslowdown\tpaired_exit\n1\taa\t2\n",
		"bad slowdown":     "session\tslowdown\tpaired_exit\n1\tlots\t0\n",
		"NaN slowdown":     "session\tslowdown\tpaired_exit\n1\tNaN\t0\n",
		"Inf slowdown":     "session\tslowdown\tpaired_exit\n1\t+Inf\t0\n",
		"not sure, passed": "session\tslowdown\tpaired_exit\tnot_sure\n1\taa\t0\t1\n",
		"not sure, NaN":    "session\tslowdown\tpaired_exit\tnot_sure\n1\taa\t3\tNaN\n",
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
	// A canary record's name is read by its layout, as every record's:
	// a part more, or no slowdown, is refused, not read past.
	for bad, want := range map[string]string{
		"/slowdown=0.1/round=2-2": "a record of the gate's canaries with a part of its name more (/round=2)",
		"/rate=0.1-2":             "a record of the gate's canaries without its key slowdown",
	} {
		d := t.TempDir()
		rec := "commit: abc\n\nBenchmark" + CanaryBenchmark + bad + " 1 0 failed 0 rerun\n"
		os.WriteFile(filepath.Join(d, "night.txt"), []byte(rec), 0o644)
		if _, err := ReadCanaries(d); err == nil || !strings.Contains(err.Error(), "night.txt:3: Benchmark"+CanaryBenchmark+bad+": "+want) {
			t.Errorf("a canary record %s: error %v, want one containing %q", bad, err, want)
		}
	}
	if _, err := ReadCanaries(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no canary session") {
		t.Errorf("an empty folder: error %v", err)
	}
}

func fmtF(f float64) string { return fmt.Sprint(f) }

func itoa(n int) string { return fmt.Sprint(n) }

// TestReadCanariesOnce: a path given twice, a folder and a path under
// it, a link to a file read already, and a copy of a session's record
// (the store keeps the canary.txt of the session's folder) each count
// the session once (issue 52: counted twice, they narrowed the
// intervals).
func TestReadCanariesOnce(t *testing.T) {
	dir := t.TempDir()
	tsv := "session\tslowdown\tpaired_exit\n1\taa\t0\n2\t0.10\t1\n"
	os.WriteFile(filepath.Join(dir, "sessions.tsv"), []byte(tsv), 0o644)
	var b bytes.Buffer
	w := benchfmt.NewWriter(&b)
	r := CanaryRecord(0, Outcome{Rounds: make([]Round, 8)})
	r.Config = []benchfmt.Config{{Key: "commit", Value: []byte("abc"), File: true}, {Key: "date", Value: []byte("2026-11-27T00:00:00Z"), File: true}}
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(dir, "session")
	store := filepath.Join(dir, "store", "machine")
	os.MkdirAll(session, 0o755)
	os.MkdirAll(store, 0o755)
	os.WriteFile(filepath.Join(session, CanaryFile), b.Bytes(), 0o644)
	os.WriteFile(filepath.Join(store, "20261127T000000Z-abc.txt"), b.Bytes(), 0o644)
	link := filepath.Join(t.TempDir(), "link.tsv")
	if err := os.Symlink(filepath.Join(dir, "sessions.tsv"), link); err != nil {
		t.Fatal(err)
	}
	for name, paths := range map[string][]string{
		"once":              {dir},
		"twice":             {dir, dir},
		"a folder under it": {dir, session, filepath.Join(dir, "sessions.tsv")},
		"through a link":    {dir, link},
		"spelled otherwise": {dir, dir + "/./store/.."},
	} {
		cs, err := ReadCanaries(paths...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(cs) != 3 {
			t.Errorf("%s: %d canaries; want 3: the two sessions of the table and the one record", name, len(cs))
		}
		var text bytes.Buffer
		if err := WriteCanaryText(&text, cs); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "3 canary sessions") || !strings.Contains(text.String(), "met again") ||
			name == "once" && !strings.Contains(text.String(), "(1 more met again") {
			t.Errorf("%s:\n%s", name, text.String())
		}
	}
	// A second session with the same outcome is another session.
	r.Config[1].Value = []byte("2026-11-28T00:00:00Z")
	b.Reset()
	w = benchfmt.NewWriter(&b)
	w.Write(r)
	os.WriteFile(filepath.Join(store, "20261128T000000Z-abc.txt"), b.Bytes(), 0o644)
	if cs, err := ReadCanaries(dir); err != nil || len(cs) != 4 {
		t.Errorf("another night's record: %d canaries, %v; want 4", len(cs), err)
	}
}

// TestReadCanariesRefusesBadRecords: a canary record without a failed
// or rerun value, or with one that is not 0 or 1, is refused with one
// line naming the file and the line (issue 52: it counted as a pass).
func TestReadCanariesRefusesBadRecords(t *testing.T) {
	for name, values := range map[string]string{
		"no failed":           "0 rerun 8 rounds",
		"failed NaN":          "NaN failed 0 rerun 8 rounds",
		"failed -1":           "-1 failed 0 rerun 8 rounds",
		"failed 0.5":          "0.5 failed 0 rerun 8 rounds",
		"no rerun":            "0 failed 8 rounds",
		"rerun +Inf":          "0 failed +Inf rerun 8 rounds",
		"failed twice":        "0 failed 1 failed 0 rerun 8 rounds",
		"not-sure -1":         "0 failed 0 rerun -1 not-sure 8 rounds",
		"failed and rerun":    "1 failed 1 rerun 8 rounds",
		"not sure, not rerun": "0 failed 0 rerun 1 not-sure 8 rounds",
	} {
		d := t.TempDir()
		path := filepath.Join(d, "night.txt")
		rec := "commit: abc\n\nBenchmarkLadder/level=raw-2 1 5 ns/op\nBenchmark" + CanaryBenchmark + "/slowdown=0 1 " + values + "\n"
		os.WriteFile(path, []byte(rec), 0o644)
		_, err := ReadCanaries(d)
		if err == nil || !strings.HasPrefix(err.Error(), path+":4: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line naming %s:4", name, err, path)
		}
	}
}

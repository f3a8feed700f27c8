package resultwrite

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

var testConfig = []resultfile.Config{
	{Key: "goos", Value: "linux"},
	{Key: "goarch", Value: "amd64"},
	{Key: "cpu", Value: "Test CPU"},
	{Key: "commit", Value: "abc1234"},
	{Key: "device", Value: "emulated"},
	{Key: "raw-size", Value: "1024"},
}

func withCommit(c string) []resultfile.Config {
	cfg := slices.Clone(testConfig)
	cfg[3].Value = c
	return cfg
}

func ladderResult(level string, stepNs float64) *benchfmt.Result {
	return &benchfmt.Result{
		Name:  benchfmt.Name("BenchmarkLadder/level=" + level + "/workers=4/transforms=naive-2"),
		Iters: 10,
		Values: []benchfmt.Value{
			{Value: stepNs, Unit: "ns/op"},
			{Value: 1e9 / stepNs, Unit: "steps/s"},
			{Value: 256e9 / stepNs, Unit: "samples/s"},
		},
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestFileResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ladder.txt")
	f, err := Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open wrote the file before any Add: %v", err)
	}
	name := "BenchmarkLadder/level=raw/workers=4/transforms=naive-2"
	if err := f.Add(ladderResult("raw", 581e6)); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ladderResult("raw", 579e6), ladderResult("host", 300e6)); err != nil {
		t.Fatal(err)
	}
	if got := f.Done(name); got != 2 {
		t.Fatalf("Done = %d, want 2", got)
	}

	// Reopen, as a resumed sweep would.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{name, strings.TrimPrefix(name, "Benchmark")} {
		if got := f.Done(n); got != 2 {
			t.Errorf("after reopening, Done(%q) = %d, want 2", n, got)
		}
	}
	if got := f.Done("BenchmarkLadder/level=host/workers=4/transforms=naive-2"); got != 1 {
		t.Errorf("Done(host) = %d, want 1", got)
	}
	if got := f.Done("BenchmarkNothing"); got != 0 {
		t.Errorf("Done(missing) = %d, want 0", got)
	}
	if err := f.Add(ladderResult("raw", 583e6)); err != nil {
		t.Fatal(err)
	}
	if got := f.Done(name); got != 3 {
		t.Errorf("Done = %d after a third Add, want 3", got)
	}
	if got, want := f.Values(name, "ns/op"), []float64{581e6, 579e6, 583e6}; !slices.Equal(got, want) {
		t.Errorf("Values(ns/op) = %v, want %v", got, want)
	}
	if got := f.Values(name, "sec/op"); len(got) != 3 || math.Abs(got[0]-0.581) > 1e-12 {
		t.Errorf("Values(sec/op) = %v, want 0.581, ...", got)
	}
	if got := f.Values(name, "steps/s"); len(got) != 3 {
		t.Errorf("Values(steps/s) = %v, want 3 values", got)
	}

	rs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, string(r.Name))
		if r.GetConfig("cpu") != "Test CPU" || r.GetConfig("raw-size") != "1024" {
			t.Errorf("result %s lost its configuration: %v", r.Name, r.Config)
		}
	}
	want := []string{"Ladder/level=raw/workers=4/transforms=naive-2", "Ladder/level=raw/workers=4/transforms=naive-2",
		"Ladder/level=host/workers=4/transforms=naive-2", "Ladder/level=raw/workers=4/transforms=naive-2"}
	if !slices.Equal(names, want) {
		t.Errorf("file holds %q, want %q", names, want)
	}
	if v, _ := rs[3].Value("sec/op"); v != nsToSec(583e6) {
		t.Errorf("last result: %v sec/op, want 0.583", v)
	}
	if got := dirEntries(t, filepath.Dir(path)); !slices.Equal(got, []string{".ladder.txt.lock", "ladder.txt"}) {
		t.Errorf("while open, directory holds %q, want the lock and ladder.txt", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirEntries(t, filepath.Dir(path)); !slices.Equal(got, []string{"ladder.txt"}) {
		t.Errorf("after Close, directory holds %q, want only ladder.txt", got)
	}
}

func TestFileLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	f, err := Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	r := ladderResult("raw", 5e8)
	r.Values = append(r.Values, benchfmt.Value{Value: 1.5e6, Unit: "ttfb-ns"}, benchfmt.Value{Value: 7, Unit: "widgets"})
	if err := f.Add(r); err != nil {
		t.Fatal(err)
	}
	want := `Unit steps/s better=higher
Unit samples/s better=higher
Unit ttfb-ns better=lower

goos: linux
goarch: amd64
cpu: Test CPU
commit: abc1234
device: emulated
raw-size: 1024

BenchmarkLadder/level=raw/workers=4/transforms=naive-2 10 5e+08 ns/op 2 steps/s 512 samples/s 1.5e+06 ttfb-ns 7 widgets
`
	if got := readString(t, path); got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	_, meta, err := resultfile.ReadUnits(path)
	if err != nil {
		t.Fatal(err)
	}
	for unit, want := range map[string]resultfile.Direction{"steps/s": resultfile.HigherIsBetter, "ttfb-ns": resultfile.LowerIsBetter, "ttfb-sec": resultfile.LowerIsBetter, "sec/op": resultfile.LowerIsBetter, "widgets": resultfile.NoDirection} {
		if got := resultfile.DirectionOf(unit, meta); got != want {
			t.Errorf("DirectionOf(%s) = %v, want %v", unit, got, want)
		}
	}
}

// Issue 32, item 16: a file is resumed only by the build that made it.
// A resumed file whose commit changed (another revision, or a dirty tree
// whose diff changed: machine.Environment hashes it into the commit) is
// refused, naming both, and left as it was; --fresh replaces it. The
// build before the fix resumed it, with the new results in a second
// configuration block.
func TestResumeRefusesAnotherBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	f, err := Open(path, withCommit("def5678-dirty-0a1b2c3d"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ladderResult("raw", 5e8)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := readString(t, path)
	for _, other := range []string{"def5678-dirty-99999999", "abc1234", "def5678-dirty"} {
		f, err = Open(path, withCommit(other))
		if !errors.Is(err, resultfile.ErrRefused) || !strings.Contains(err.Error(), `holds results of another build (commit "def5678-dirty-0a1b2c3d" in file, now "`+other+`")`) {
			t.Errorf("resuming with commit %s: %v, want it refused naming both builds", other, err)
		}
		if err == nil {
			f.Close()
		}
	}
	if got := readString(t, path); got != before {
		t.Errorf("a refused resume changed the file:\n%s", got)
	}
	f, err = Open(path, withCommit("def5678-dirty-0a1b2c3d"))
	if err != nil {
		t.Fatalf("the same build must resume: %v", err)
	}
	if err := f.Add(ladderResult("raw", 6e8)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f, err = OpenFresh(path, withCommit("abc1234"))
	if err != nil {
		t.Fatalf("--fresh with another build: %v", err)
	}
	if err := f.Add(ladderResult("raw", 7e8)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].GetConfig("commit") != "abc1234" {
		t.Errorf("after --fresh: %d results, commit %q; want 1 of abc1234", len(rs), rs[0].GetConfig("commit"))
	}
	// A file that already mixes two builds (written before this rule) is
	// resumed by neither.
	mixed := filepath.Join(t.TempDir(), "mixed.txt")
	body := "commit: abc1234\n\nBenchmarkA 1 30 frames/s\n\ncommit: def5678\n\nBenchmarkA 1 31 frames/s\n"
	if err := os.WriteFile(mixed, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"abc1234", "def5678"} {
		if f, err := Open(mixed, []resultfile.Config{{Key: "commit", Value: c}}); !errors.Is(err, resultfile.ErrRefused) {
			t.Errorf("a file of two builds resumed by %s: %v", c, err)
			if err == nil {
				f.Close()
			}
		}
	}
}

func TestOpenConfigMismatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	if err := WriteFile(path, testConfig, []*benchfmt.Result{ladderResult("raw", 5e8)}); err != nil {
		t.Fatal(err)
	}
	before := readString(t, path)
	for _, tc := range []struct {
		name string
		cfg  func([]resultfile.Config) []resultfile.Config
		want string
	}{
		{"changed", func(c []resultfile.Config) []resultfile.Config { c[2].Value = "Other CPU"; return c }, `cpu: "Test CPU" in file, now "Other CPU"`},
		{"added", func(c []resultfile.Config) []resultfile.Config {
			return append(c, resultfile.Config{Key: "batch", Value: "64"})
		}, `batch: not in file, now "64"`},
		{"removed", func(c []resultfile.Config) []resultfile.Config { return c[:5] }, `raw-size: "1024" in file, not set now`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(path, tc.cfg(slices.Clone(testConfig)))
			if err == nil {
				t.Fatal("Open succeeded with a different configuration")
			}
			if !errors.Is(err, resultfile.ErrRefused) {
				t.Errorf("error %v is not ErrRefused", err)
			}
			for _, s := range []string{tc.want, path + " holds results of a different setup"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	if readString(t, path) != before {
		t.Error("a refused Open changed the file")
	}
}

func TestOpenRefusesBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	bad := "goos: linux\n\nBenchmarkX 10 1.5x ns/op\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, testConfig)
	if err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Fatalf("Open of a file with a syntax error: %v, want an error naming %s:3", err, path)
	}
	if _, err := Open(filepath.Join(path, "sub.txt"), testConfig); err == nil {
		t.Error("Open under a file (not a directory) succeeded")
	}
}

func TestConfigValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	for _, cfg := range [][]resultfile.Config{
		{{Key: "Goos", Value: "linux"}},
		{{Key: "go os", Value: "linux"}},
		{{Key: "a:b", Value: "linux"}},
		{{Key: "", Value: "x"}},
		{{Key: "cpu", Value: ""}},
		{{Key: "cpu", Value: "a\nb"}},
		{{Key: "cpu", Value: " leading"}},
		{{Key: "cpu", Value: "a"}, {Key: "cpu", Value: "b"}},
	} {
		if _, err := Open(path, cfg); err == nil {
			t.Errorf("Open accepted config %q", cfg)
		}
		if err := WriteFile(path, cfg, nil); err == nil {
			t.Errorf("WriteFile accepted config %q", cfg)
		}
	}
}

func TestAddValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	f, err := Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ladderResult("raw", 5e8)); err != nil {
		t.Fatal(err)
	}
	before := readString(t, path)
	v := []benchfmt.Value{{Value: 1, Unit: "ns/op"}}
	for _, r := range []*benchfmt.Result{
		nil,
		{Name: benchfmt.Name("Benchmark"), Iters: 1, Values: v},
		{Name: benchfmt.Name("BenchmarkA B"), Iters: 1, Values: v},
		{Name: benchfmt.Name("BenchmarkA"), Iters: 0, Values: v},
		{Name: benchfmt.Name("BenchmarkA"), Iters: 1},
		{Name: benchfmt.Name("BenchmarkA"), Iters: 1, Values: []benchfmt.Value{{Value: math.NaN(), Unit: "ns/op"}}},
		{Name: benchfmt.Name("BenchmarkA"), Iters: 1, Values: []benchfmt.Value{{Value: math.Inf(1), Unit: "steps/s"}}},
		{Name: benchfmt.Name("BenchmarkA"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: ""}}},
		{Name: benchfmt.Name("BenchmarkA"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "steps per s"}}},
	} {
		// A good result alongside must not be written either.
		if err := f.Add(ladderResult("host", 3e8), r); err == nil {
			t.Errorf("Add accepted %+v", r)
		}
	}
	if readString(t, path) != before || f.Done("BenchmarkLadder/level=host/workers=4/transforms=naive-2") != 0 {
		t.Error("a refused Add changed the file or the File")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	if err := WriteFile(path, testConfig, []*benchfmt.Result{ladderResult("raw", 5e8)}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, testConfig, []*benchfmt.Result{ladderResult("raw", 6e8)}); err != nil {
		t.Fatal(err)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{"r.txt"}) {
		t.Errorf("after writing, directory holds %q, want only r.txt", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("rewrite did not keep the file's mode: %v %v", fi.Mode(), err)
	}
	// A rename over a directory fails; nothing is left behind.
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(sub, testConfig, nil); err == nil {
		t.Error("WriteFile over a directory succeeded")
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{"r.txt", "sub"}) {
		t.Errorf("after a failed write, directory holds %q", got)
	}
}

// A write that fails leaves the old file whole, no temporary file, and
// the File as it was (atomicfile's tests inject failures at each step).
func TestFailedWriteKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	f, err := Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Add(ladderResult("raw", 5e8)); err != nil {
		t.Fatal(err)
	}
	before := readString(t, path)
	big := ladderResult("raw", 6e8)
	big.Values[0].Unit = "bad unit" // refused before anything is written
	if err := f.Add(big); err == nil {
		t.Fatal("Add of a unit with a space succeeded")
	}
	if got := readString(t, path); got != before {
		t.Errorf("failed write changed the file:\n%s", got)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{".r.txt.lock", "r.txt"}) {
		t.Errorf("failed write left %q", got)
	}
	if got := f.Done("BenchmarkLadder/level=raw/workers=4/transforms=naive-2"); got != 1 {
		t.Errorf("Done = %d after a failed Add, want 1", got)
	}
}

// Unit metadata an existing file carries survives a rewrite.
func TestResumeKeepsUnitMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	orig := "Unit frames/s better=higher assume=exact\n\ncommit: x\n\nBenchmarkA 1 30 frames/s\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, []resultfile.Config{{Key: "commit", Value: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	r := &benchfmt.Result{Name: benchfmt.Name("BenchmarkA"), Iters: 1, Values: []benchfmt.Value{{Value: 31, Unit: "frames/s"}}}
	if err := f.Add(r); err != nil {
		t.Fatal(err)
	}
	want := "Unit frames/s assume=exact\nUnit frames/s better=higher\n\ncommit: x\n\nBenchmarkA 1 30 frames/s\nBenchmarkA 1 31 frames/s\n"
	if got := readString(t, path); got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadSyntaxError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.txt")
	data := "goos: linux\n\nBenchmarkA 1 10 ns/op\nBenchmarkA x 10 ns/op\nBenchmarkA 1 10\nBenchmarkA 1 12 ns/op\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := resultfile.Read(path)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{path + ":4: parsing iteration count", path + ":5: missing units"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	var se *benchfmt.SyntaxError
	if !errors.As(err, &se) || se.Line != 4 {
		t.Errorf("error is not a *benchfmt.SyntaxError for line 4: %#v", err)
	}
	if len(rs) != 2 {
		t.Errorf("got %d results alongside the error, want the 2 good ones", len(rs))
	}
	if _, err := resultfile.Read(filepath.Join(t.TempDir(), "missing.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file = %v, want ErrNotExist", err)
	}
}

func TestReadManyErrors(t *testing.T) {
	data := strings.Repeat("BenchmarkA 1 x ns/op\n", 25)
	_, _, err := resultfile.Parse(strings.NewReader(data), "many.txt")
	if err == nil || !strings.Contains(err.Error(), "many.txt:10:") || strings.Contains(err.Error(), "many.txt:11:") ||
		!strings.Contains(err.Error(), "15 more syntax errors") {
		t.Errorf("error = %v", err)
	}
}

func TestRoundTripValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	in := []*benchfmt.Result{{
		Name:  benchfmt.Name("Ladder/level=raw"),
		Iters: 3,
		Values: []benchfmt.Value{
			{Value: 123456789, Unit: "ns/op"},
			{Value: 0.1 + 0.2, Unit: "steps/s"},
			{Value: 1.5, Unit: "MB/s"},
			{Value: 2e9, Unit: "peak-rss-B"},
		},
	}}
	if err := WriteFile(path, nil, in); err != nil {
		t.Fatal(err)
	}
	rs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || string(rs[0].Name) != "Ladder/level=raw" || rs[0].Iters != 3 {
		t.Fatalf("read %+v", rs)
	}
	want := []benchfmt.Value{
		{Value: nsToSec(123456789), Unit: "sec/op", OrigValue: 123456789, OrigUnit: "ns/op"},
		{Value: 0.1 + 0.2, Unit: "steps/s"},
		{Value: 1.5e6, Unit: "B/s", OrigValue: 1.5, OrigUnit: "MB/s"},
		{Value: 2e9, Unit: "peak-rss-B"},
	}
	if !slices.Equal(rs[0].Values, want) {
		t.Errorf("values = %+v\nwant %+v", rs[0].Values, want)
	}
	// Results as resultfile.Read returns them write back unchanged.
	path2 := filepath.Join(t.TempDir(), "r2.txt")
	if err := WriteFile(path2, nil, rs); err != nil {
		t.Fatal(err)
	}
	if a, b := readString(t, path), readString(t, path2); a != b {
		t.Errorf("rewrite differs:\n%s\n---\n%s", a, b)
	}
}

// nsToSec converts as benchfmt.Reader tidies ns/op to sec/op.
func nsToSec(ns float64) float64 {
	v, _ := benchunit.Tidy(ns, "ns/op")
	return v
}

// benchfmt.Reader leaves "0 ns/op" in ns/op (it tidies only when the
// value changes); resultfile.Read, File and the gate put it in sec/op with the rest.
func TestZeroValuesTidied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	if err := os.WriteFile(path, []byte("BenchmarkA 1 0 ns/op\nBenchmarkA 1 5 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, _, err := resultfile.ReadUnits(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Values[0].Unit != "sec/op" || r.Values[0].OrigUnit != "ns/op" {
			t.Errorf("value %+v, want it in sec/op", r.Values[0])
		}
	}
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Values("BenchmarkA", "ns/op"); !slices.Equal(got, []float64{0, 5}) {
		t.Errorf("Values = %v, want [0 5]", got)
	}
}

func TestFileConcurrentAdd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	f, err := Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 5
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			var err error
			for i := range each {
				if err == nil {
					err = f.Add(ladderResult("raw", float64(5e8+w*100+i)))
				}
				f.Done("Ladder/level=raw/workers=4/transforms=naive-2")
			}
			errs <- err
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	rs, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != workers*each || f.Done("Ladder/level=raw/workers=4/transforms=naive-2") != workers*each || len(f.Results()) != workers*each {
		t.Errorf("file has %d results, Done %d, want %d", len(rs), f.Done("Ladder/level=raw/workers=4/transforms=naive-2"), workers*each)
	}
}

// One writer per file: a second Open, in this process or another, is
// refused while the first holds the file, and succeeds after Close.
func TestOneWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	f, err := Open(path, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ladderResult("raw", 5e8)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, testConfig)
	if !errors.Is(err, resultfile.ErrRefused) || !strings.Contains(err.Error(), fmt.Sprintf("being written by another run (process %d)", os.Getpid())) {
		t.Errorf("second Open = %v, want a refusal naming process %d", err, os.Getpid())
	}
	if err := WriteFile(path, testConfig, nil); !errors.Is(err, resultfile.ErrRefused) {
		t.Errorf("WriteFile while open = %v, want a refusal", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := Open(path, testConfig)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	g.Close()
}

// Open and WriteFile write over nothing but a results file.
func TestRefuseNonResults(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"go.mod", "module example.com/x\n\ngo 1.26\n", "holds no benchmark results"},
		{"main.go", "package main\n\nfunc main() {}\n", "holds no benchmark results"},
		{"image.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a results file"},
		{"config-only.txt", "cpu: X\ndevice: emulated\n", "holds no benchmark results"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		for what, err := range map[string]error{
			"Open":      func() error { _, err := Open(path, testConfig); return err }(),
			"OpenFresh": func() error { _, err := OpenFresh(path, testConfig); return err }(),
			"WriteFile": WriteFile(path, testConfig, []*benchfmt.Result{ladderResult("raw", 5e8)}),
		} {
			if !errors.Is(err, resultfile.ErrRefused) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s(%s) = %v, want a refusal naming it, %q", what, tc.name, err, tc.want)
			}
		}
		if got := readString(t, path); got != tc.content {
			t.Errorf("%s changed: %q", tc.name, got)
		}
	}
}

// OpenFresh keeps the old results file until the first Add, which
// replaces it with the new results alone.
func TestOpenFreshKeepsOldUntilFirstAdd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	if err := WriteFile(path, testConfig, []*benchfmt.Result{ladderResult("raw", 5e8), ladderResult("host", 3e8)}); err != nil {
		t.Fatal(err)
	}
	before := readString(t, path)
	other := withCommit("x")
	other[2].Value = "Other CPU"
	f, err := OpenFresh(path, other)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := readString(t, path); got != before {
		t.Errorf("OpenFresh changed the file before any result")
	}
	if f.Done("Ladder/level=raw/workers=4/transforms=naive-2") != 0 {
		t.Error("OpenFresh resumed the old results")
	}
	if err := f.Add(ladderResult("raw", 6e8)); err != nil {
		t.Fatal(err)
	}
	rs, err := resultfile.Read(path)
	if err != nil || len(rs) != 1 || rs[0].GetConfig("cpu") != "Other CPU" {
		t.Errorf("after the first Add the file holds %d results (%v), want the new one alone", len(rs), err)
	}
}

// resultfile.Value finds a value by the unit the file wrote it in, after
// benchfmt.Reader has tidied it (ns/op is read as sec/op): issue 21, item 13.
func TestValueFindsWrittenUnits(t *testing.T) {
	const text = "BenchmarkX 1 5e+08 ns/op 2 steps/s 1500 ttfb-ns\n"
	rd := benchfmt.NewReader(strings.NewReader(text), "x")
	if !rd.Scan() {
		t.Fatal(rd.Err())
	}
	r := rd.Result().(*benchfmt.Result)
	for unit, want := range map[string]float64{"ns/op": 5e8, "sec/op": 0.5, "steps/s": 2, "ttfb-ns": 1500, "ttfb-sec": 1.5e-6} {
		if v, ok := resultfile.Value(r, unit); !ok || math.Abs(v-want) > 1e-9*want {
			t.Errorf("Value(%s) = %v, %v; want %v", unit, v, ok, want)
		}
	}
	if _, ok := resultfile.Value(r, "samples/s"); ok {
		t.Error("Value found a unit the result lacks")
	}
}

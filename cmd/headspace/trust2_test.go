package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The tests of issue 21 ("results you can trust, round 2"), one or more
// for each numbered item; item 8's is interrupt_linux_test.go, item 13's
// harness/resultfile's TestValueFindsWrittenUnits (and harness/peer's
// TestLadderScriptRunsOnCPU), item 16's the fuzzers themselves.

// oneLine2 checks a refusal: exit 2, one line on stderr naming want.
func oneLine2(t *testing.T, what string, code int, stderr, want string) {
	t.Helper()
	if code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("%s: exit %d, stderr %q; want 2 and one line containing %q", what, code, stderr, want)
	}
}

// Item 1: every output flag refuses a file headspace did not write for
// it, before measuring, and leaves it as it was.
func TestEveryOutputFlagRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep")
	const content = "module x\n"
	if err := os.WriteFile(keep, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := []string{"--raw-size", "32", "--crop", "16", "--batch", "2", "--workers", "1"}
	for _, args := range [][]string{
		{"sim", "--loaders", "2", "--load", "200ms", "--step", "100ms", "--duration", "2s", "--gif", keep},
		{"whatif", "--report", keep},
		{"whatif", "--save", keep},
		{"whatif", "--plot", keep + ".png"},
		{"whatif", "--out", keep},
		append([]string{"loaders", "--batches", "3", "--cpuprofile", keep}, tiny...),
		append([]string{"loaders", "--batches", "3", "--out", keep}, tiny...),
		append([]string{"analyze", "--transforms", "naive", "--stats-json", keep}, tiny...), // one analysis: its file as named
		append([]string{"analyze", "--out", keep}, tiny...),
		{"peer", "--report", keep},
		{"peer", "--out", keep},
	} {
		if strings.HasSuffix(args[len(args)-1], ".png") || slicesContains(args, keep+".png") {
			if err := os.WriteFile(keep+".png", []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, _, stderr := runCLI(args...)
		oneLine2(t, strings.Join(args[:2], " "), code, stderr, "keep")
		if b, _ := os.ReadFile(keep); string(b) != content {
			t.Fatalf("%v changed the file: %q", args, b)
		}
	}
	// Its own kind of file is replaced: a second animation over the first.
	gif := filepath.Join(dir, "a.gif")
	for range 2 {
		if code, _, stderr := runCLI("sim", "--loaders", "2", "--load", "200ms", "--step", "100ms", "--duration", "1s", "--gif", gif); code != 0 {
			t.Fatalf("sim --gif %s: exit %d: %s", gif, code, stderr)
		}
	}
	// A report of another command is not one to replace.
	report := filepath.Join(dir, "r.md")
	os.WriteFile(report, []byte("# peer\n\n<!-- written by headspace: peer report -->\n"), 0o644)
	code, _, stderr := runCLI("whatif", "--report", report)
	oneLine2(t, "whatif --report over a peer report", code, stderr, "not a what-if report")
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Item 2: --force replaces only a headspace dataset, and deletes only the
// files its manifest lists.
func TestDatasetForceDeletesOnlyItsFiles(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "w")
	os.Mkdir(w, 0o755)
	os.WriteFile(filepath.Join(w, "manifest.json"), []byte(`{"name":"app"}`), 0o644)
	os.WriteFile(filepath.Join(w, "index.html"), []byte("x"), 0o644)
	code, _, stderr := runCLI("dataset", "write", "--n", "2", "--raw-size", "64", "--format", "raw", "--out", w, "--force")
	oneLine2(t, "--force over an app's manifest.json", code, stderr, "not a headspace dataset")
	if _, err := os.Stat(filepath.Join(w, "index.html")); err != nil {
		t.Fatalf("index.html was deleted: %v", err)
	}

	ds := filepath.Join(dir, "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "3", "--raw-size", "16", "--format", "png", "--layout", "files", "--out", ds); code != 0 {
		t.Fatalf("write: exit %d: %s", code, stderr)
	}
	os.WriteFile(filepath.Join(ds, "notes.txt"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(ds, "sub"), 0o755)
	os.WriteFile(filepath.Join(ds, "sub", "more.txt"), []byte("mine too"), 0o644)
	if code, _, stderr := runCLI("dataset", "write", "--n", "2", "--raw-size", "16", "--format", "raw", "--layout", "files", "--out", ds, "--force"); code != 0 {
		t.Fatalf("write --force: exit %d: %s", code, stderr)
	}
	for _, name := range []string{"notes.txt", "sub/more.txt"} {
		if b, err := os.ReadFile(filepath.Join(ds, name)); err != nil || !strings.HasPrefix(string(b), "mine") {
			t.Errorf("%s: %q, %v; want the user's file kept", name, b, err)
		}
	}
	if ms, _ := filepath.Glob(filepath.Join(ds, "*.png")); len(ms) != 0 {
		t.Errorf("the old dataset's samples are still there: %v", ms)
	}
	if code, _, stderr := runCLI("dataset", "verify", ds); code != 0 {
		t.Errorf("verify after --force: exit %d: %s", code, stderr)
	}
}

// Item 3: a symbolic link in place of the lock file is not followed.
func TestLockFileSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	out := filepath.Join(dir, "lk.txt")
	if code, _, stderr := ladderInto(out); code != 0 { // a results file to resume
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	if err := os.Symlink(victim, filepath.Join(dir, ".lk.txt.lock")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := ladderInto(out, "--count", "2")
	oneLine2(t, "ladder with a linked lock file", code, stderr, "symbolic link")
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the lock's link target now holds %q", b)
	}
}

// Item 4: a partial run never replaces a complete file: it is written
// beside it, and says it is partial.
func TestPartialRunKeepsCompleteFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.txt")
	cfg := []resultfile.Config{{Key: "cpu", Value: "test"}}
	rec := func(n int) []*benchmarkResult {
		var rs []*benchmarkResult
		for i := range n {
			rs = append(rs, result("BenchmarkWhatIf/check/cores=1/workers="+string(rune('1'+i)), 1))
		}
		return rs
	}
	if _, err := writeWhole(driver.Output{Path: out, Beside: true}, cfg, rec(3), false); err != nil {
		t.Fatal(err)
	}
	wrote, err := writeWhole(driver.Output{Path: out, Beside: true}, cfg, rec(2), true)
	if err != nil || wrote != filepath.Join(dir, "x.partial.txt") {
		t.Fatalf("partial write went to %s, %v; want x.partial.txt", wrote, err)
	}
	if rs, _ := resultfile.Read(out); len(rs) != 3 {
		t.Errorf("the complete file holds %d results, want its 3", len(rs))
	}
	rs, _ := resultfile.Read(wrote)
	if len(rs) != 2 || rs[0].GetConfig("partial") != "true" {
		t.Errorf("the partial file: %d results, partial %q", len(rs), rs[0].GetConfig("partial"))
	}
	// A smaller complete run is kept beside too, unless forced.
	if wrote, err := writeWhole(driver.Output{Path: out, Beside: true}, cfg, rec(1), false); err != nil || wrote != filepath.Join(dir, "x.smaller.txt") {
		t.Errorf("smaller run went to %s, %v", wrote, err)
	}
	if wrote, err := writeWhole(driver.Output{Path: out, Beside: true, Force: true}, cfg, rec(1), false); err != nil || wrote != out {
		t.Errorf("forced smaller run went to %s, %v", wrote, err)
	}
}

// writeWhole writes recs whole to out under cfg as a command's run does
// (driver.Run), interrupted (the file marked partial) if partial, and
// returns the path it wrote.
func writeWhole(out driver.Output, cfg []resultfile.Config, recs []*benchmarkResult, partial bool) (string, error) {
	var stopped error
	if partial {
		stopped = context.Canceled
	}
	o, err := driver.Run(context.Background(), driver.Job{Settings: func() []resultfile.Config { return cfg },
		Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) { return recs, stopped }}, out)
	if o.Interrupted && err == stopped {
		err = nil
	}
	return o.Path, err
}

// Item 5: a quick run does not replace full results without --force, and
// analyze --out does not replace a ladder's results.
func TestQuickRunKeepsFullResults(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "results", "004-sim.txt")
	os.MkdirAll(filepath.Dir(saved), 0o755)
	if _, err := writeWhole(driver.Output{Path: saved}, []resultfile.Config{{Key: "quick", Value: "false"}}, []*benchmarkResult{result("BenchmarkSim/load=1s", 1)}, false); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(saved)
	code, _, stderr := runCLI("reproduce", "--quick", "--docs", "004", "--out", dir)
	oneLine2(t, "reproduce --quick over full results", code, stderr, "--force")
	if after, _ := os.ReadFile(saved); !bytes.Equal(before, after) {
		t.Error("the full results were replaced")
	}

	out := filepath.Join(dir, "ladder.txt")
	if code, _, stderr := ladderInto(out); code != 0 {
		t.Fatalf("ladder: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("analyze", "--raw-size", "32", "--crop", "16", "--batch", "2", "--workers", "1", "--out", out)
	oneLine2(t, "analyze --out over a ladder's results", code, stderr, "BenchmarkLadder")

	// An analysis's own file holds its input wait and stages too
	// (analysis.Benchmarks): analyze rewrites it (it refused, naming
	// BenchmarkHeadspaceInput).
	own := filepath.Join(dir, "analysis.txt")
	for i := range 2 {
		if code, _, stderr := runCLI("analyze", "--raw-size", "32", "--crop", "16", "--batch", "2", "--workers", "1", "--out", own); code != 0 {
			t.Fatalf("analyze --out, run %d over its own file: exit %d: %s", i+1, code, stderr)
		}
	}
}

// Item 6: a named pipe as --out is written in place, result by result,
// to its reader; with no reader the run does not hang past its context.
func TestFIFOOut(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err) // not Linux: nothing to test
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // waits for the writer
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "raw,device", "--out", fifo}, tinyLadder...)
	if code, _, stderr := runCLI(append(args, "--count", "2")...); code != 0 {
		t.Fatalf("ladder into a pipe: exit %d: %s", code, stderr)
	}
	select {
	case s := <-got:
		if n := strings.Count(s, "BenchmarkLadder/"); n != 4 {
			t.Errorf("the reader got %d results, want 4 (each once):\n%s", n, s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader got nothing")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi.Mode(), err)
	}

	// No reader: the first result waits for one, and an interrupt ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var o, e bytes.Buffer
	start := time.Now()
	code := run(ctx, args, &o, &e)
	if code != 130 || time.Since(start) > 20*time.Second {
		t.Errorf("no reader: exit %d after %v, stderr %q; want 130 soon after the interrupt", code, time.Since(start), e.String())
	}
}

// Item 7: reads are bounded and open only regular files: a manifest that
// is /dev/zero or a pipe, and whatif --stats /dev/zero, fail at once.
func TestReadsAreBoundedAndRegular(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "2", "--raw-size", "16", "--format", "raw", "--out", ds); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	man := filepath.Join(ds, "manifest.json")
	os.Remove(man)
	os.Symlink("/dev/zero", man)
	code, _, stderr := runCLI("dataset", "verify", ds)
	oneLine2(t, "manifest → /dev/zero", code, stderr, "not a regular file")
	code, _, stderr = runCLI(append([]string{"ladder", "--data", ds, "--levels", "none", "--workers", "1"}, tinyLadder...)...)
	oneLine2(t, "ladder --data with manifest → /dev/zero", code, stderr, "not a regular file")
	os.Remove(man)
	if err := syscall.Mkfifo(man, 0o644); err == nil {
		done := make(chan int, 1)
		go func() { c, _, _ := runCLI("dataset", "verify", ds); done <- c }()
		select {
		case c := <-done:
			if c != 2 {
				t.Errorf("manifest a pipe: exit %d, want 2", c)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("dataset verify hangs on a pipe as its manifest")
		}
	}
	code, _, stderr = runCLI("whatif", "--stats", "/dev/zero")
	oneLine2(t, "whatif --stats /dev/zero", code, stderr, "not a regular file")
}

// pngHeader is a PNG's signature and IHDR chunk claiming w×h pixels: all
// image.DecodeConfig reads.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	b := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
}

// rehash rewrites file name's size and checksum in dir's manifest.
func rehash(t *testing.T, dir, name string) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, name))
	var m ondisk.Manifest
	mb, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		if m.Files[i].Name == name {
			sum := sha256.Sum256(b)
			m.Files[i].Size, m.Files[i].SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
		}
	}
	mb, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644)
}

// Item 9: a PNG whose header claims 20000×20000 is refused from its
// header, before decoding, with exit 2.
func TestDecompressionBombRefusedFromHeader(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "2", "--raw-size", "48", "--format", "png", "--layout", "files", "--out", ds); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	name := "000000.png"
	os.WriteFile(filepath.Join(ds, name), append(pngHeader(20000, 20000), make([]byte, 1<<20)...), 0o644)
	rehash(t, ds, name)
	code, _, stderr := runCLI(append([]string{"ladder", "--data", ds, "--levels", "none", "--workers", "1", "--transforms", "fast"}, tinyLadder...)...)
	if code != 2 || !strings.Contains(stderr, "20000x20000") {
		t.Errorf("ladder over a bomb: exit %d, stderr %q; want 2 naming the header's 20000x20000", code, stderr)
	}
}

// Item 11: a dataset given as a symbolic link warms and evicts its files.
func TestSymlinkedDatasetDir(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "3", "--raw-size", "16", "--format", "raw", "--layout", "files", "--out", ds); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	link := filepath.Join(dir, "link")
	os.Symlink("ds", link)
	for _, verb := range []string{"warm", "evict"} {
		code, out, stderr := runCLI("dataset", verb, link)
		if code == 2 && verb == "evict" && !ondisk.EvictAvailable {
			continue
		}
		if code != 0 || !strings.Contains(out, " 4 files") {
			t.Errorf("dataset %s LINK: exit %d, %q %q; want its 4 files", verb, code, out, stderr)
		}
	}
}

// Item 12: a simulation that completes nothing gives no verdict.
func TestSimNoVerdictWithoutBatches(t *testing.T) {
	code, out, _ := runCLI("sim", "--step-stddev", "1000h", "--duration", "2s")
	if code != 0 || strings.Contains(out, "bound by") || strings.Contains(out, "model idle") || !strings.Contains(out, "verdict:           none") {
		t.Errorf("exit %d:\n%s\nwant no idle share, no bottleneck, and verdict none", code, out)
	}
}

// Item 14: a staging directory left by a killed write is removed by the
// next; --force through a link keeps the link.
func TestDatasetStagingAndLinks(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	stale := ds + ".tmp-999999999"
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, "000000.rgb"), []byte("half"), 0o644)
	if code, _, stderr := runCLI("dataset", "write", "--n", "2", "--raw-size", "16", "--format", "raw", "--out", ds); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the killed write's staging directory is still there")
	}
	link := filepath.Join(dir, "link")
	os.Symlink("ds", link)
	if code, _, stderr := runCLI("dataset", "write", "--n", "3", "--raw-size", "16", "--format", "raw", "--out", link, "--force"); code != 0 {
		t.Fatalf("write --force LINK: %d %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if m, err := ondisk.ReadManifest(ds); err != nil || m.Count != 3 {
		t.Errorf("the link's target holds %v, %v; want the new 3 samples", m, err)
	}
}

// Item 15: late checks are early, with exit 2; counts are bounded; a huge
// number is "too large".
func TestLateChecksExit2(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif", "--verify-workers", "99999"}, "--verify-workers 99999"},
		{[]string{"peer", "--workers", "2000"}, "--workers 2000"},
		{[]string{"peer", "--count", "99999999999"}, "--count 99999999999"},
		{[]string{"peer", "--batches", "99999999999"}, "--batches 99999999999"},
		{[]string{"reproduce", "--quick", "--docs", "004", "--out", notDir}, notDir},
		{[]string{"whatif", "--at-steps", "1e308"}, "too large"},
	} {
		start := time.Now()
		code, _, stderr := runCLI(tc.args...)
		oneLine2(t, strings.Join(tc.args, " "), code, stderr, tc.want)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: refused after %v, not before the run", tc.args, d)
		}
	}
	// A corrupt dataset: exit 2 naming it.
	ds := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "2", "--raw-size", "48", "--format", "raw", "--layout", "files", "--out", ds); code != 0 {
		t.Fatalf("write: %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(ds, "000001.rgb"), []byte("short"), 0o644)
	rehash(t, ds, "000001.rgb")
	code, _, stderr := runCLI(append([]string{"ladder", "--data", ds, "--levels", "none", "--workers", "1", "--transforms", "fast"}, tinyLadder...)...)
	if code != 2 || !strings.Contains(stderr, "000001.rgb") {
		t.Errorf("ladder over a corrupt dataset: exit %d, stderr %q; want 2 naming the sample", code, stderr)
	}
}

type benchmarkResult = benchfmt.Result

// result is a one-value steps/s result named name.
func result(name string, v float64) *benchfmt.Result {
	return &benchfmt.Result{Name: benchfmt.Name(name), Iters: 1, Values: []benchfmt.Value{{Value: v, Unit: "steps/s"}}}
}

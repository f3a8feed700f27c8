package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHeadspace is a stand-in for headspace in a throw-away repository:
// given --out FILE and --count N it appends runs of BenchmarkFake until
// the file holds N, each taking FACTOR (a constant of the commit) times
// 1 ms with a little noise; $FAKE_SLEEP makes each run sleep that long.
const fakeHeadspace = `package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

const factor = FACTOR

// flags are the flags it takes besides --out and --count.
var flags = []string{FLAGS}

func main() {
	var out string
	count := 1
	for i := 2; i < len(os.Args); i++ {
		switch a := os.Args[i]; a {
		case "--out":
			i++
			out = os.Args[i]
		case "--count":
			i++
			count, _ = strconv.Atoi(os.Args[i])
		case "--help":
			os.Exit(0)
		default:
			known := false
			for _, f := range flags {
				known = known || f == a
			}
			if !known {
				fmt.Fprintln(os.Stderr, "headspace ladder: flag provided but not defined: "+a)
				os.Exit(2)
			}
		}
	}
	b, _ := os.ReadFile(out)
	have := strings.Count(string(b), "BenchmarkFake")
	if d, err := time.ParseDuration(os.Getenv("FAKE_SLEEP")); err == nil {
		time.Sleep(d)
	}
	s := string(b)
	if s == "" {
		s = "cpu: Fake\ncores: 2\n"
	}
	for n := have; n < count; n++ {
		s += fmt.Sprintf("BenchmarkFake-2 1 %g ns/op\n", factor*1e6*(1+0.002*float64(n%3)))
	}
	os.WriteFile(out, []byte(s), 0o644)
}
`

// fakeRepo makes a git repository whose commits hold fake headspaces:
// one per factor ("" for a commit that does not build; "1.0 --new" for
// one that takes the flag --new as well), and chdirs the test into it.
// It returns the commits' hashes.
func fakeRepo(t *testing.T, factors ...string) []string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	os.MkdirAll(filepath.Join(dir, "cmd", "headspace"), 0o755)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fake\n\ngo 1.22\n"), 0o644)
	var revs []string
	for _, f := range factors {
		fields := append(strings.Fields(f), "")
		var quoted []string
		for _, flag := range fields[min(1, len(fields)-1) : len(fields)-1] {
			quoted = append(quoted, strconv.Quote(flag))
		}
		src := strings.Replace(fakeHeadspace, "FACTOR", fields[0], 1)
		src = strings.Replace(src, "FLAGS", strings.Join(quoted, ", "), 1)
		if f == "" {
			src = "package main\n\nfunc main() { undefined() }\n"
		}
		os.WriteFile(filepath.Join(dir, "cmd", "headspace", "main.go"), []byte(src), 0o644)
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", "factor "+f)
		revs = append(revs, git("rev-parse", "HEAD"))
	}
	t.Chdir(dir)
	return revs
}

func TestGatePaired(t *testing.T) {
	for _, tc := range []struct {
		name     string
		factors  []string // base, head
		wantCode int
		wantText string
	}{
		{"same", []string{"1.0", "1.0"}, 0, "PASS: every verdict metric's interval excludes a slowdown beyond 3%"},
		{"slower", []string{"1.0", "1.2"}, 1, "FAIL: 1 verdict metric(s) slower, confirmed"},
		{"faster", []string{"1.0", "0.8"}, 0, "faster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			revs := fakeRepo(t, tc.factors...)
			out := filepath.Join(t.TempDir(), "session")
			args := []string{"gate", "--base", revs[0], "--out", out, "--rounds", "5", "--confirm", "5", "--quiet-wait", "0", "--seed", "3"}
			if tc.name == "faster" {
				// No --canary: no canary record.
				args = append(args, "--", "ladder")
			} else {
				args = append(args, "--canary", "0", "--", "ladder")
			}
			code, stdout, stderr := runCLI(args...)
			if code != tc.wantCode || !strings.Contains(stdout, tc.wantText) {
				t.Fatalf("exit %d, want %d with %q:\n%s\n%s", code, tc.wantCode, tc.wantText, stdout, stderr)
			}
			report, err := os.ReadFile(filepath.Join(out, "gate.txt"))
			if err != nil || !strings.Contains(string(report), tc.wantText) {
				t.Errorf("gate.txt: %v\n%s", err, report)
			}
			for _, side := range []string{"base.txt", "head.txt"} {
				b, err := os.ReadFile(filepath.Join(out, side))
				wantRuns := 5
				if tc.wantCode == 1 {
					wantRuns = 10
				}
				if err != nil || strings.Count(string(b), "BenchmarkFake") != wantRuns {
					t.Errorf("%s: %v; want %d runs, one a round:\n%s", side, err, wantRuns, b)
				}
			}
			if tc.name == "faster" {
				if _, err := os.Stat(filepath.Join(out, "canary.txt")); err == nil {
					t.Error("a session run without --canary wrote canary.txt")
				}
				return
			}
			// Run as an A/A canary (--canary 0), the session's outcome is
			// a record the history takes and --canaries counts.
			// The A/A line: sessions, passed, failed.
			want := map[bool]string{true: "A/A 1 0 1", false: "A/A 1 1 0"}[tc.wantCode == 1]
			code, stdout, stderr = runCLI("gate", "--canaries", out)
			aa := ""
			for _, l := range strings.Split(stdout, "\n") {
				if f := strings.Fields(l); len(f) > 3 && f[0] == "A/A" {
					aa = strings.Join(f[:4], " ")
				}
			}
			if code != 0 || aa != want {
				t.Errorf("gate --canaries: exit %d, want a line %q:\n%s\n%s", code, want, stdout, stderr)
			}
			store := filepath.Join(t.TempDir(), "store")
			if code, _, stderr := runCLI("history", "add", "--store", store, filepath.Join(out, "canary.txt")); code != 0 {
				t.Errorf("history add canary.txt: exit %d: %s", code, stderr)
			}
			if code, stdout, stderr := runCLI("gate", "--canaries", store); code != 0 || !strings.Contains(stdout, "1 canary sessions") {
				t.Errorf("gate --canaries of the store: exit %d:\n%s\n%s", code, stdout, stderr)
			}
		})
	}
}

// TestGateBadBase: a base that is no commit, or does not build, is one
// line and exit 2, with nothing written.
func TestGateBadBase(t *testing.T) {
	revs := fakeRepo(t, "", "1.0")
	for _, tc := range []struct {
		base, want string
	}{
		{"no-such-branch", "--base no-such-branch: no such commit"},
		{revs[0], "does not build: "},
	} {
		out := filepath.Join(t.TempDir(), "session")
		code, stdout, stderr := runCLI("gate", "--base", tc.base, "--out", out, "--quiet-wait", "0", "--", "ladder")
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("--base %s: exit %d, stderr %q; want 2 with one line %q\n%s", tc.base, code, stderr, tc.want, stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--base %s: %s was created", tc.base, out)
		}
	}
	wt, _ := exec.Command("git", "worktree", "list").Output()
	if n := strings.Count(strings.TrimSpace(string(wt)), "\n"); n != 0 {
		t.Errorf("a worktree was left behind:\n%s", wt)
	}
}

func TestGateUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "x", "--", "ladder"}, "--base REV is required"},
		{[]string{"--base", "HEAD", "--", "ladder"}, "--out DIR is required"},
		{[]string{"--base", "HEAD", "--out", "x"}, "want the command to run after --"},
		{[]string{"--base", "HEAD", "--out", "x", "--", "ladder", "--count", "3"}, "the command's --count is the gate's to set"},
		{[]string{"--base", "HEAD", "--out", "x", "--", "ladder", "--out=y"}, "the command's --out=y is the gate's to set"},
		{[]string{"--base", "HEAD", "--out", "x", "--rounds", "2", "--", "ladder"}, "--rounds 2: want 5 to 1000"},
		{[]string{"--base", "HEAD", "--out", "x", "--threshold", "1.5", "--", "ladder"}, "--threshold 1.5"},
		{[]string{"--base", "HEAD", "--out", "x", "--max-rounds", "12", "--", "ladder"}, "--max-rounds 12: want 0 (8 × --rounds) or from --rounds plus --confirm (16) to 10000"},
		// Issue 41: a file as --out is refused before anything is built.
		{[]string{"--base", "HEAD", "--out", "gate_test.go", "--", "ladder"}, "--out gate_test.go is a file"},
		{[]string{"--base", "HEAD", "--out", "gate_test.go/x", "--", "ladder"}, "gate_test.go is a file, not a folder"},
	} {
		code, _, stderr := runCLI(append([]string{"gate"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestGateInterrupted: SIGINT (the context's end) during the rounds
// keeps the rounds done, the report marked partial, within 1 s.
func TestGateInterrupted(t *testing.T) {
	revs := fakeRepo(t, "1.0", "1.0")
	t.Setenv("FAKE_SLEEP", "300ms")
	out := filepath.Join(t.TempDir(), "session")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var code int
	var stdout, stderr strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, []string{"gate", "--base", revs[0], "--out", out, "--quiet-wait", "0", "--", "ladder"}, &stdout, &stderr)
	}()
	// Wait for two rounds to be kept, then interrupt.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(filepath.Join(out, "gate.txt"))
		if strings.Contains(string(b), "PARTIAL: interrupted after 2 rounds") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second round in 2 minutes; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	stopped := time.Now()
	<-done
	if d := time.Since(stopped); d > 5*time.Second {
		t.Errorf("stopped %v after the interrupt", d)
	}
	if code != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr.String())
	}
	if want := regexp.MustCompile(`headspace gate: interrupted: [0-9]+ rounds kept in ` + regexp.QuoteMeta(out) + `, marked partial\n$`); !want.MatchString(stderr.String()) {
		t.Errorf("stderr does not end with %s:\n%s", want, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(out, "gate.txt"))
	if !strings.Contains(string(b), "PARTIAL: interrupted after") {
		t.Errorf("gate.txt:\n%s", b)
	}
	if strings.Count(string(mustRead(t, filepath.Join(out, "base.txt"))), "BenchmarkFake") < 2 {
		t.Error("base.txt lost the rounds done")
	}
	// Replayed, the interrupted session's few rounds are a rerun (exit
	// 3), never a pass (issue 41: 2 rounds of a head 3x slower passed).
	if code, stdout, stderr := runCLI("gate", "--replay", out); code != 3 || !strings.Contains(stdout, "too few rounds: rerun") {
		t.Errorf("replay of the interrupted session: exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
}

// TestGateReplayTooFew: a session of two rounds, the head 3x slower,
// replayed, is a rerun (exit 3), not a pass.
func TestGateReplayTooFew(t *testing.T) {
	dir := t.TempDir()
	for side, f := range map[string]float64{"base.txt": 1, "head.txt": 3} {
		s := "cpu: Fake\ncores: 2\n"
		for n := range 2 {
			s += fmt.Sprintf("BenchmarkFake-2 1 %g ns/op\n", f*1e6*(1+0.002*float64(n)))
		}
		if err := os.WriteFile(filepath.Join(dir, side), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI("gate", "--replay", dir)
	if code != 3 || !strings.Contains(stdout, "RERUN") || strings.Contains(stdout, "PASS") {
		t.Errorf("exit %d, want 3 and RERUN:\n%s\n%s", code, stdout, stderr)
	}
}

// TestGateReplayNotSure: a session whose verdict metric's interval still
// holds a slowdown beyond the threshold is not a pass: exit 3, "not
// sure: rerun" (issue 52: "+29.61% [0.666, 1.647] not sure" exited 0).
func TestGateReplayNotSure(t *testing.T) {
	dir := t.TempDir()
	noisy := []float64{0.67, 1.65, 0.9, 1.5, 0.8, 1.3, 1.6, 1.1}
	for side, f := range map[string]float64{"base.txt": 0, "head.txt": 1} {
		s := "cpu: Fake\ncores: 2\n"
		for _, r := range noisy {
			s += fmt.Sprintf("BenchmarkFake-2 1 %g ns/op\n", 1e6*(1+f*(r-1)))
		}
		if err := os.WriteFile(filepath.Join(dir, side), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI("gate", "--replay", dir)
	if code != 3 || !strings.Contains(stdout, "RERUN: not sure") || strings.Contains(stdout, "PASS") ||
		strings.TrimSpace(stderr) != "headspace gate: not sure: rerun (1 verdict metric(s) may be slower by more than the threshold after 8 rounds)" {
		t.Errorf("exit %d, want 3 and not sure:\n%s\n%s", code, stdout, stderr)
	}
}

// TestGateCommandRefused: a command one build cannot run (a flag the
// base lacks) is exit 2 with the reason, before any round, and leaves
// no session behind (issue 41: it was exit 1 and "PARTIAL: interrupted
// after 0 rounds").
func TestGateCommandRefused(t *testing.T) {
	revs := fakeRepo(t, "1.0", "1.0 --new")
	out := filepath.Join(t.TempDir(), "session")
	code, stdout, stderr := runCLI("gate", "--base", revs[0], "--out", out, "--quiet-wait", "0", "--", "ladder", "--new")
	want := "cannot run 'headspace ladder --new': headspace ladder: flag provided but not defined: --new"
	if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--base "+revs[0]) {
		t.Errorf("exit %d, stderr %q; want 2 naming the base and %q\n%s", code, stderr, want, stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was created", out)
	}
}

// TestGateInterruptedWhileBuilding: SIGINT during the builds is exit
// 130 and leaves nothing: no worktree, no temporary folder, no build
// folder of the go command (issue 41: exit 2 "does not build: signal:
// killed", and go-build folders left in the temp dir). The go command
// here is a stand-in that makes its work folder and waits, as a long
// build does.
func TestGateInterruptedWhileBuilding(t *testing.T) {
	revs := fakeRepo(t, "1.0", "1.0")
	bin := t.TempDir()
	fakeGo := "#!/bin/sh\nmkdir -p \"$GOTMPDIR/go-build0001\" && echo work > \"$GOTMPDIR/go-build0001/x\"\nexec sleep 60\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := filepath.Join(t.TempDir(), "session")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var code int
	var stdout, stderr syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, []string{"gate", "--base", revs[0], "--out", out, "--quiet-wait", "0", "--", "ladder"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "building") || len(globAll(t, tmp, "*/gotmp/go-build*")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no build started in a minute; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if code != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr.String())
	}
	if left := globAll(t, tmp, "*"); len(left) > 0 {
		t.Errorf("left in the temp dir: %v", left)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was created", out)
	}
	wt, _ := exec.Command("git", "worktree", "list").Output()
	if n := strings.Count(strings.TrimSpace(string(wt)), "\n"); n != 0 {
		t.Errorf("a worktree was left behind:\n%s", wt)
	}
}

// globAll is filepath.Glob of pattern under dir.
func globAll(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// syncBuffer is a strings.Builder safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

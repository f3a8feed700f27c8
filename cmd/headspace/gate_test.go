package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

func main() {
	var out string
	count := 1
	for i, a := range os.Args {
		switch a {
		case "--out":
			out = os.Args[i+1]
		case "--count":
			count, _ = strconv.Atoi(os.Args[i+1])
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
// one per factor ("" for a commit that does not build), and chdirs the
// test into it. It returns the commits' hashes.
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
		src := strings.Replace(fakeHeadspace, "FACTOR", f, 1)
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
		{"same", []string{"1.0", "1.0"}, 0, "PASS: no verdict metric slower"},
		{"slower", []string{"1.0", "1.2"}, 1, "FAIL: 1 verdict metric(s) slower, confirmed"},
		{"faster", []string{"1.0", "0.8"}, 0, "faster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			revs := fakeRepo(t, tc.factors...)
			out := filepath.Join(t.TempDir(), "session")
			code, stdout, stderr := runCLI("gate", "--base", revs[0], "--out", out, "--rounds", "5", "--confirm", "5", "--quiet-wait", "0", "--seed", "3", "--", "ladder")
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
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

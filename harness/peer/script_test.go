package peer_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/peer"
)

// sh runs the fake scripts in testdata as the peer's interpreter.
func sh(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("the runner tests run their fake scripts with /bin/sh: %v", err)
	}
	return p
}

func tiny() peer.Settings {
	return peer.Settings{Width: 32, Height: 24, Crop: 8, Batch: 4, Batches: 3, Seed: 1}
}

func TestSettingsArgs(t *testing.T) {
	got := strings.Join(peer.DefaultSettings().Args([]int{1, 2, 4}), " ")
	want := "--raw-size 1024x1024 --crop 256 --batch 256 --batches 6 --workers 1,2,4 --seed 1"
	if got != want {
		t.Errorf("Args = %q, want %q", got, want)
	}
}

func TestSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*peer.Settings)
		want string
	}{
		{"ok", func(*peer.Settings) {}, ""},
		{"one batch", func(s *peer.Settings) { s.Batches = 1 }, "batches 1"},
		{"odd crop", func(s *peer.Settings) { s.Crop = 7 }, "crop 7 must be even"},
		{"crop too large", func(s *peer.Settings) { s.Crop = 30 }, "larger than the 32x24"},
		{"no batch", func(s *peer.Settings) { s.Batch = 0 }, "batch size 0"},
		{"no raw", func(s *peer.Settings) { s.Width = 0 }, "raw size 0x24"},
	} {
		s := tiny()
		tc.edit(&s)
		err := s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestRunParsesTheScriptsOutput(t *testing.T) {
	p := peer.Peer{Python: sh(t), Script: "testdata/fake.sh"}
	out, err := p.Run(context.Background(), tiny(), []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []peer.Measurement{
		{Impl: peer.Torch, Workers: 1, Batches: 3, TTFB: time.Second, SamplesPerSec: 100.5, CPU: 1250 * time.Millisecond},
		{Impl: peer.Torch, Workers: 2, Batches: 3, TTFB: 2 * time.Second, SamplesPerSec: 200.5, CPU: 1250 * time.Millisecond},
	}
	if len(out.Results) != len(want) {
		t.Fatalf("results %+v, want %+v", out.Results, want)
	}
	for i := range want {
		if out.Results[i] != want[i] {
			t.Errorf("result %d: %+v, want %+v", i, out.Results[i], want[i])
		}
	}
	if v := out.Get("torch"); v != "0.0.0-fake" {
		t.Errorf("torch version %q, want 0.0.0-fake (config %v)", v, out.Config)
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		script  string
		workers []int
		want    []string
	}{
		{"testdata/fail.sh", []int{2}, []string{"testdata/fail.sh", "workers=2", "exit status 1", "RuntimeError: DataLoader worker (pid 4242) is killed"}},
		{"testdata/garbage.sh", []int{1}, []string{"testdata/garbage.sh (workers=1)", "BenchmarkOther/workers=1: not a record of Peer"}},
		{"testdata/missing.sh", []int{4}, []string{"testdata/missing.sh", "workers=4", "exit status"}},
	} {
		p := peer.Peer{Python: sh(t), Script: tc.script}
		_, err := p.Run(context.Background(), tiny(), tc.workers)
		if err == nil {
			t.Errorf("%s: no error", tc.script)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.script, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q is not one line", tc.script, err)
		}
	}
	var re *peer.RunError
	p := peer.Peer{Python: sh(t), Script: "testdata/fail.sh"}
	if _, err := p.Run(context.Background(), tiny(), []int{1}); !errors.As(err, &re) || !strings.Contains(re.Stderr, "Traceback") {
		t.Errorf("error %v: want a *RunError with the whole traceback", err)
	}
}

func TestRunRejectsResultsForOtherWorkers(t *testing.T) {
	// fake.sh answers the workers it is given; ask it for 3 but check 3
	// results against a script that was given 1 by wrapping it.
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "wrong.sh")
	fake, err := filepath.Abs("testdata/fake.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec sh "+fake+" \"$@\" --workers 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := peer.Peer{Python: sh(t), Script: wrapper}
	_, err = p.Run(context.Background(), tiny(), []int{1})
	if err == nil || !strings.Contains(err.Error(), "workers=7") || !strings.Contains(err.Error(), "want BenchmarkPeer/impl=torch/workers=1") {
		t.Errorf("error %v, want one naming the unexpected workers=7", err)
	}
}

// alive says whether pid is a live process (a zombie counts as gone).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestRunCancelKillsTheScriptAndItsChildren(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	t.Setenv("PEER_TEST_PIDFILE", pidfile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := peer.Peer{Python: sh(t), Script: "testdata/hang.sh"}
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, tiny(), []int{3})
		done <- err
	}()
	var child int
	for child == 0 {
		select {
		case err := <-done:
			t.Fatalf("hang.sh ended before it was cancelled: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if data, err := os.ReadFile(pidfile); err == nil {
			child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if err == nil || !strings.Contains(err.Error(), "testdata/hang.sh (workers=3)") {
		t.Errorf("error %v does not name the script and worker count", err)
	}
	// The script's own child was in its process group: it is killed too.
	// Wait for the kill to land, however long the machine takes.
	for alive(child) {
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name         string
		p            peer.Peer
		notInstalled bool
		want         string
	}{
		{"ok", peer.Peer{Python: sh(t), Script: "testdata/fake.sh"}, false, ""},
		{"no python", peer.Peer{Python: "/nonexistent/python3", Script: "testdata/fake.sh"}, true, "/nonexistent/python3"},
		{"no torch", peer.Peer{Python: sh(t), Script: "testdata/nomodule.sh"}, true, "No module named 'torch'"},
		{"no script", peer.Peer{Python: sh(t), Script: "testdata/missing.py"}, false, "testdata/missing.py does not exist"},
		{"script fails", peer.Peer{Python: sh(t), Script: "testdata/fail.sh"}, false, "testdata/fail.sh (--check)"},
	} {
		err := tc.p.Check(context.Background())
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if got := errors.Is(err, peer.ErrNotInstalled); got != tc.notInstalled {
			t.Errorf("%s: errors.Is(%v, ErrNotInstalled) = %v, want %v", tc.name, err, got, tc.notInstalled)
		}
	}
}

// TestScriptCompiles checks the real peer's syntax with the interpreter
// make peer uses, where there is one; it needs no torch.
func TestScriptCompiles(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is not installed (make test-deps installs Debian's python3): %v", python, err)
	}
	cmd := exec.Command(python, "-m", "py_compile", "../../peers/torch/dataloader.py")
	// Keep the bytecode out of the source tree.
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("py_compile peers/torch/dataloader.py: %v\n%s", err, out)
	}
}

// TestSettingsArgsData checks that a dataset on disk is passed to the peer
// as --data and to our loader as Data.
func TestSettingsArgsData(t *testing.T) {
	s := peer.DefaultSettings()
	s.Data = "/tmp/some data"
	args := s.Args([]int{1})
	if n := len(args); n < 2 || args[n-2] != "--data" || args[n-1] != "/tmp/some data" {
		t.Errorf("Args = %q, want --data last", args)
	}
	if c := s.Pipeline("fast", 1); c.Data != "/tmp/some data" {
		t.Errorf("Pipeline's Data = %q", c.Data)
	}
}

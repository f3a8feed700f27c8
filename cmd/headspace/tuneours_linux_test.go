package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// tinyOurs is a pipeline of the emulated ladder that runs a candidate in
// a fraction of a second: 48² images cropped to 24, batches of 4, a
// 4 ms step.
var tinyOurs = []string{"--raw-size", "48", "--crop", "24", "--batch", "4", "--step", "4ms", "--steps", "6", "--warmup", "1"}

// TestTuneOurs tunes the emulated ladder end to end at a tiny size from
// one worker and a prefetch of 1: the profile, the search, the final
// check or keep your own, the answer as flags, and a result file that
// records every run by its flags and decodes to the answer printed.
func TestTuneOurs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tune.txt")
	var stdout, stderr bytes.Buffer
	args := append([]string{"tune", "--ours", "ladder", "--budget", "40s", "--rounds", "2", "--pairs", "2", "--max-workers", "4", "--workers", "1", "--prefetch", "1", "--out", out}, tinyOurs...)
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"profile (headspace ladder as given, --workers 1 --prefetch 1): ", "the what-if model's pick: ",
		"candidates (steps/s over their search runs, alternated round by round):\n  --workers ", "(your own)", "results: " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workloads.TuneCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Answer()
	want := "keep your own (--workers 1 --prefetch 1): "
	if a.Recommend {
		want = "set: " + a.Best.Flags() + "\n  final check, paired runs alternated:\n    before (your own):         "
	}
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("the file's answer %+v is not the one printed (%q):\n%s", a, want, stdout.String())
	}
	if res.Profile.Pipeline != "ladder" || res.Script != "none" || len(res.Runs) == 0 || res.Stopped == "interrupted" {
		t.Errorf("the file decodes to pipeline %q, level %q, %d runs, stopped %q", res.Profile.Pipeline, res.Script, len(res.Runs), res.Stopped)
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{"BenchmarkTune/pipeline=ladder/level=none/stage=profile/workers=1/prefetch=1/fetch=0", "/stage=search/workers=", "budget: 40s", "command: headspace tune --ours ladder"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	tuneFromRebuilds(t, out, stdout.String())
}

// tuneFromRebuilds checks tune --from out prints what the run that
// wrote out printed, ran, but for its results line.
func tuneFromRebuilds(t *testing.T, out, ran string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"tune", "--from", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("--from: exit %d\n%s", code, stderr.String())
	}
	if want := strings.TrimSuffix(ran, "results: "+out+"\n"); stdout.String() != want {
		t.Errorf("--from %s printed\n%s\nthe run printed\n%s", out, stdout.String(), want)
	}
}

// TestTuneOursFaults checks tune --ours's bad input: one line, exit 2,
// no file.
func TestTuneOursFaults(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown pipeline", []string{"--ours", "peer"}, `--ours "peer": want ladder or remote`},
		{"a command too", []string{"--ours", "ladder", "--", "python3", "train.py"}, "tune --ours ladder takes no command"},
		{"a script's flag", []string{"--ours", "ladder", "--loader", "2"}, "--loader do not apply to tune --ours ladder"},
		{"ours's flag with a script", []string{"--workers", "3", "--", "python3", "train.py"}, "--workers only apply with --ours ladder|remote, not to a training command"},
		{"remote's flag on the ladder", []string{"--ours", "ladder", "--rtt", "5ms"}, "--rtt do not apply to tune --ours ladder"},
		{"the ladder's flag on remote", []string{"--ours", "remote", "--raw-size", "64"}, "--raw-size do not apply to tune --ours remote"},
		{"workers out of bound", []string{"--ours", "ladder", "--workers", "0"}, "--workers"},
		{"tiny budget", []string{"--ours", "ladder", "--budget", "2s"}, "--budget 2s is too small for one candidate"},
		{"no loader at the level", []string{"--ours", "ladder", "--level", "host"}, "--level host runs no loader: nothing to tune"},
		// 2000 steps of 4 ms: a candidate alone takes 8 s and more.
		{"budget after the profile", append([]string{"--ours", "ladder", "--budget", "12s", "--steps", "2000"}, tinyOurs[:8]...), "--budget 12s is too small: budget too small: one candidate and its paired check need about"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".txt")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"tune", "--out", out}, tc.args...), &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; code != 2 || !strings.Contains(last, tc.want) {
				t.Errorf("exit %d, last line %q; want 2 and %q\n%s", code, last, tc.want, stderr.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestTuneOursSIGINT interrupts tune --ours ladder in its search: the
// best so far printed, a complete --out marked partial that decodes,
// exit 130.
func TestTuneOursSIGINT(t *testing.T) {
	bin := buildHeadspace(t)
	out := filepath.Join(t.TempDir(), "tune.txt")
	cmd := exec.Command(bin, append([]string{"tune", "--ours", "ladder", "--budget", "10m", "--workers", "1", "--prefetch", "1", "--out", out}, append(tinyOurs[:8], "--steps", "300")...)...)
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stderr.String(), "tune: search") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no search run ended in 2 minutes:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // into the next run
	code, _ := interrupt(t, cmd, "tune --ours ladder")
	if code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "in the search (interrupted)") || !strings.Contains(stdout.String(), "keep your own (--workers 1 --prefetch 1)") && !strings.Contains(stdout.String(), "set: --workers") {
		t.Errorf("no best so far:\n%s", stdout.String())
	}
	if want := "headspace tune: interrupted: the best so far is above\n"; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("stderr does not end with %q:\n%s", want, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "partial: true") {
		t.Fatalf("%s: %v, not marked partial:\n%s", out, err, b)
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workloads.TuneCodec.Decode(recs)
	if err != nil || res.Stopped != "interrupted" || len(res.Runs) == 0 || res.Profile.Pipeline != "ladder" {
		t.Errorf("the file decodes to %d runs, stopped %q: %v", len(res.Runs), res.Stopped, err)
	}
}

// TestTuneOursRemote tunes remote's pipeline end to end at a tiny size
// against the local S3 server it starts: a 64-sample dataset behind a
// 2 ms link, from 1 worker and 1 request in flight; the search walks the
// fetch concurrency too, and the file records it and says the bucket's
// setup.
func TestTuneOursRemote(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	out := filepath.Join(t.TempDir(), "tune.txt")
	var stdout, stderr bytes.Buffer
	args := []string{"tune", "--ours", "remote", "--budget", "60s", "--rounds", "1", "--pairs", "1", "--max-workers", "2", "--max-fetch", "4",
		"--workers", "1", "--prefetch", "1", "--fetch-concurrency", "1", "--samples", "64", "--rtt", "2ms", "--steps", "4", "--warmup", "1", "--dir", t.TempDir(), "--out", out}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"profile (headspace remote as given, --workers 1 --prefetch 1 --fetch-concurrency 1): ", "requests in flight"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workloads.TuneCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	fetches := map[int]bool{}
	for _, r := range res.Runs {
		fetches[r.Setting.Fetch] = true
	}
	if res.Profile.Pipeline != "remote" || res.Profile.Own.Fetch != 1 || len(fetches) < 2 {
		t.Errorf("the file decodes to pipeline %q from %+v, fetch concurrencies run %v", res.Profile.Pipeline, res.Profile.Own, fetches)
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{"BenchmarkTune/pipeline=remote/level=none/stage=profile/workers=1/prefetch=1/fetch=1", "remote-rtt: 2ms", "remote-server: versitygw"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
}

// TestTuneOursSIGINTInProfile interrupts tune --ours ladder in its
// profile (2000 steps of 4 ms: 8 s and more): nothing was measured, so
// nothing is printed or written, and it exits 130 saying so.
func TestTuneOursSIGINTInProfile(t *testing.T) {
	bin := buildHeadspace(t)
	out := filepath.Join(t.TempDir(), "tune.txt")
	cmd := exec.Command(bin, append([]string{"tune", "--ours", "ladder", "--budget", "10m", "--workers", "1", "--prefetch", "1", "--out", out}, append(tinyOurs[:8], "--steps", "2000")...)...)
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // into the profile
	if strings.Contains(stderr.String(), "tune: profile") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the profile ended within a second:\n%s", stderr.String())
	}
	code, _ := interrupt(t, cmd, "tune --ours ladder")
	if want := "headspace tune: interrupted: before the profile ended: nothing was measured\n"; code != 130 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 130 and %q", code, stderr.String(), want)
	}
	if stdout.Len() > 0 {
		t.Errorf("printed %q, want nothing", stdout.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

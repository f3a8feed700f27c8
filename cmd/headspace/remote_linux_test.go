package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSIGINTDuringRemoteFetch: a ladder reading a bucket over a slow link
// (a 30 s round trip: the listing's first request is in flight when the
// signal comes) exits 130 within 10 s of SIGINT, long before the request
// could end (the bound is loose: a busy CI machine's exit is not what is
// checked), and leaves no file in the local copy's cache.
func TestSIGINTDuringRemoteFetch(t *testing.T) {
	s := startS3(t)
	dir := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--out", dir, "--n", "16", "--raw-size", "32", "--format", "jpeg"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI("dataset", "upload", "--make-bucket", dir, "s3://slow/ds"); code != 0 {
		t.Fatal(stderr)
	}
	bin := buildHeadspace(t)
	for _, lv := range []string{"none", "local"} {
		cache := t.TempDir()
		cmd := exec.Command(bin, "ladder", "--data", "s3://slow/ds", "--s3-endpoint", s.Endpoint(), "--link", "latency=30s",
			"--levels", lv, "--transforms", "fast", "--workers", "1", "--crop", "16", "--batch", "4", "--step", "1ms", "--steps", "2", "--count", "1")
		cmd.Env = append(os.Environ(), "HEADSPACE_CACHE="+cache)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // in the listing's first request
		code, took := interrupt(t, cmd, lv)
		if code != 130 {
			t.Errorf("%s: exit %d, want 130; stderr %q", lv, code, stderr.String())
		}
		if took > 10*time.Second {
			t.Errorf("%s: exited %v after SIGINT, want within 10 s", lv, took.Round(time.Millisecond))
		}
		filepath.WalkDir(cache, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && filepath.Base(filepath.Dir(p)) != "index" {
				t.Errorf("%s: a file left in the cache after SIGINT: %s", lv, p)
			}
			return nil
		})
	}
}

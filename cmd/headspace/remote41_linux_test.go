//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestRemoteInterruptKeepsCompleteOut: SIGINT during `remote --out F`,
// where F holds a complete run, exits 130, keeps F byte for byte and
// writes the results finished beside it, marked partial (F.partial.txt),
// as the ladder keeps a finished file.
func TestRemoteInterruptKeepsCompleteOut(t *testing.T) {
	bin := buildHeadspace(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "remote.txt")
	complete, err := os.ReadFile(filepath.Join("..", "..", "notebooks", "results", "remote-remedies.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, complete, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "remote", "--quick", "--out", out, "--dir", dir)
	cmd.Env = append(os.Environ(), "HEADSPACE_CACHE="+filepath.Join(dir, "cache"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first result on stderr: it is on disk (streamed) before the
	// next point starts.
	sc := bufio.NewScanner(stderr)
	var seen bytes.Buffer
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "samples/s") {
			break
		}
	}
	code, _ := interrupt(t, cmd, "remote")
	if code != 130 {
		t.Fatalf("remote --out F interrupted: exit %d, want 130; stderr %q", code, seen.String())
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, complete) {
		t.Errorf("F, a complete run, changed by an interrupted run (%v)", err)
	}
	partial := resultfile.Beside(out, "partial")
	rs, err := resultfile.Read(partial)
	if err != nil || len(rs) == 0 || rs[0].GetConfig("partial") != "true" {
		t.Errorf("%s: %d results, %v; want the finished results, marked partial", partial, len(rs), err)
	}
}

// TestBucketUploadRefusesPipesAndDanglingLinks: dataset upload of a
// dataset holding a named pipe, or a link that leads nowhere, exits 2 in
// one line naming it, and uploads nothing (with --make-bucket, not even
// the bucket is made).
func TestBucketUploadRefusesPipesAndDanglingLinks(t *testing.T) {
	startS3(t)
	for _, tc := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"dangling", func(p string) error { return os.Symlink(p+".gone", p) }, "a symbolic link that leads nowhere"},
	} {
		dir := fixture(t, "imagefolder")
		bad := filepath.Join(dir, "cat", "zz.jpg")
		if err := tc.make(bad); err != nil {
			t.Fatal(err)
		}
		url := "s3://upload-" + tc.name + "/if"
		code, _, stderr := runCLI("dataset", "upload", "--make-bucket", dir, url)
		oneLine2(t, "upload of a dataset with a "+tc.name, code, stderr, bad+": "+tc.want)
		u, _ := bucket.ParseURL(url)
		if _, err := bucket.Open(context.Background(), u, bucket.Options{}); err == nil || !strings.Contains(err.Error(), "no such bucket") {
			t.Errorf("%s: after a refused upload --make-bucket: %v; want no bucket made, nothing uploaded", tc.name, err)
		}
	}
}

// TestSIGINTDuringBucketIndex: SIGINT while `dataset index s3://…` waits
// on the server (a 30 s round trip: its first request is in flight) exits
// 130, not 2 ("context canceled" as bad input), within 10 s.
func TestSIGINTDuringBucketIndex(t *testing.T) {
	s := startS3(t)
	writeUpload(t, "s3://index-slow/ds", "--n", "4")
	lc, err := link.Parse("latency=30s")
	if err != nil {
		t.Fatal(err)
	}
	l, err := link.Start(context.Background(), s.Addr(), lc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bin := buildHeadspace(t)
	cmd := exec.Command(bin, "dataset", "index", "--s3-endpoint", l.URL(), "s3://index-slow/ds")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // in the first request
	if code, _ := interrupt(t, cmd, "dataset index s3://"); code != 130 {
		t.Errorf("dataset index s3:// interrupted: exit %d, %q; want 130", code, stderr.String())
	}
}

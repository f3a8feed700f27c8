package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// remoteScript is the boto3 peer, from this package's directory.
const remoteScript = "../../peers/torch/s3.py"

// TestPeerRemoteEndToEnd runs peer --remote at its smallest against the
// real server (both layouts, 1 worker, no link): the boto3 peer and ours
// each measured on each layout, every setting and the peer's versions in
// the result file, and --from rebuilding the report byte for byte. It
// needs Debian's python3-torch and python3-boto3 (make test-deps).
func TestPeerRemoteEndToEnd(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "") // StartRemote sets them for this process; restored after
	}
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	res, rep := filepath.Join(dir, "r.txt"), filepath.Join(dir, "r.md")
	code, out, stderr := runCLI("peer", "--remote", "--script", remoteScript, "--workers", "1", "--raw-size", "32", "--crop", "16", "--batch", "4",
		"--batches", "2", "--shard-size", "4", "--link", "none", "--fetch-concurrency", "2", "--out", res, "--report", rep)
	if code != 0 {
		t.Fatalf("peer --remote: exit %d\n%s\n%s", code, out, stderr)
	}
	recs, err := resultfile.Read(res)
	if err != nil {
		t.Fatal(err)
	}
	o, err := workloads.PeerRemoteCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	r := o.Report
	if len(r.Rows) != 4 {
		t.Fatalf("%d rows, want ours and the peer on both layouts: %+v", len(r.Rows), r.Rows)
	}
	for i, want := range []struct{ layout, impl string }{{peer.ImageFolder, peer.Fast}, {peer.ImageFolder, peer.Torch}, {peer.Shards, peer.Fast}, {peer.Shards, peer.Torch}} {
		row := r.Rows[i]
		if row.Layout != want.layout || row.Impl != want.impl || row.Workers != 1 || row.SamplesPerSec <= 0 {
			t.Errorf("row %d: %+v, want %s/%s at 1 worker with samples/s", i, row, want.layout, want.impl)
		}
		if (row.Impl == peer.Fast) != (row.Speedup > 0) {
			t.Errorf("row %d: speed-up %v: ours has one, the peer none", i, row.Speedup)
		}
	}
	if r.Samples != 8 || r.ShardSize != 4 || r.FetchConcurrency != 2 || r.Costs[peer.Shards].RequestsPerSample != 0.25 {
		t.Errorf("report settings %d samples, shard size %d, fetch concurrency %d, shard requests/sample %v; want 8, 4, 2, 0.25 (2 shards of 4)",
			r.Samples, r.ShardSize, r.FetchConcurrency, r.Costs[peer.Shards].RequestsPerSample)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"link: none", "link-latency: 0s", "data-store: s3", "fetch-concurrency: 2", "boto3: ", "torch: ",
		"BenchmarkPeerRemote/layout=imagefolder/impl=torch/workers=1 ", "BenchmarkPeerRemote/layout=shards/impl=fast/workers=1 "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	written, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.md")
	if code, _, stderr := runCLI("peer", "--from", res, "--report", again); code != 0 {
		t.Fatalf("peer --from: exit %d: %s", code, stderr)
	}
	if rebuilt, _ := os.ReadFile(again); string(rebuilt) != string(written) {
		t.Errorf("--from rebuilt another report:\n%s\nwant\n%s", rebuilt, written)
	}
}

// TestPeerRemoteBadInput: without boto3, and with bad flags, one line.
func TestPeerRemoteBadInput(t *testing.T) {
	fake := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fake, "boto3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "boto3", "__init__.py"), []byte("raise ModuleNotFoundError(\"No module named 'boto3'\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", fake)
	code, _, stderr := runCLI("peer", "--remote", "--script", remoteScript, "--workers", "1")
	if code != 1 || !strings.Contains(stderr, "No module named 'boto3'") || !strings.Contains(stderr, "python3-boto3") ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("no boto3: exit %d, stderr %q; want 1 and one line naming boto3 and python3-boto3", code, stderr)
	}
	t.Setenv("PYTHONPATH", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"peer", "--remote", "--link", "moon"}, "--link: "},
		{[]string{"peer", "--remote", "--layouts", "zip"}, "--layouts"},
		{[]string{"peer", "--remote", "--data", "/tmp"}, "--data does not apply to --remote"},
		{[]string{"peer", "--remote", "--crop", "999"}, "--crop 999"},
		{[]string{"peer", "--data", "s3://b/p"}, "--remote compares with the boto3 peer"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

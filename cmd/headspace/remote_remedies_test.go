package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoteReportRebuilds: `headspace remote --from` rebuilds the
// committed report byte for byte from the committed result file, and
// draws its figure.
func TestRemoteReportRebuilds(t *testing.T) {
	root := filepath.Join("..", "..")
	want, err := os.ReadFile(filepath.Join(root, "notebooks", "remote-remedies.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	report, plot := filepath.Join(out, "remote-remedies.md"), filepath.Join(out, "figures", "remote-remedies.png")
	if err := os.MkdirAll(filepath.Dir(plot), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("remote", "--from", filepath.Join(root, "notebooks", "results", "remote-remedies.txt"), "--report", report, "--plot", plot)
	if code != 0 {
		t.Fatalf("remote --from: exit %d: %s%s", code, stdout, stderr)
	}
	got, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the rebuilt report differs from notebooks/remote-remedies.md; rebuild it with headspace remote --from")
	}
	if fi, err := os.Stat(plot); err != nil || fi.Size() == 0 {
		t.Errorf("no figure drawn: %v", err)
	}
}

// TestRemoteFromRefusesMeasuringFlags: --from with a flag that sets a
// measurement is a usage error (exit 2).
func TestRemoteFromRefusesMeasuringFlags(t *testing.T) {
	code, _, stderr := runCLI("remote", "--from", "x.txt", "--quick")
	if code != 2 || !strings.Contains(stderr, "--quick") {
		t.Fatalf("remote --from x.txt --quick: exit %d, %q; want 2 naming --quick", code, stderr)
	}
}

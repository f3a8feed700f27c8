package s3server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/s3server"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartClose: the server answers on 127.0.0.1, and Close stops the
// process and removes its temporary root.
func TestStartClose(t *testing.T) {
	s, err := s3server.Start(context.Background(), s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("endpoint %s is not on 127.0.0.1", s.Endpoint())
	}
	resp, err := http.Get(s.Endpoint() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an anonymous request got %s, want a refusal", resp.Status)
	}
	root := s.Root()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("temporary root %s left after Close: %v", root, err)
	}
	if _, err := http.Get(s.Endpoint() + "/"); err == nil {
		t.Error("the server still answers after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestStartErrors: a missing or broken binary is one line naming it.
func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "versitygw")
	os.WriteFile(broken, []byte("#!/bin/sh\necho 'listen: address in use' >&2\nexit 3\n"), 0o755)
	for _, tc := range []struct{ bin, want string }{
		{filepath.Join(dir, "absent"), "absent"},
		{broken, "address in use"},
	} {
		_, err := s3server.Start(context.Background(), s3server.Options{Binary: tc.bin})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%s): %v, want an error with %q", tc.bin, err, tc.want)
		}
	}
	t.Setenv(s3server.EnvBinary, filepath.Join(dir, "nope"))
	if _, err := s3server.Binary(); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Binary with %s unset path: %v", s3server.EnvBinary, err)
	}
}

// TestStartWithRoot: a root of the caller's keeps its metadata in a
// sibling directory versitygw accepts (not one whose path starts with the
// root's), and Close leaves both.
func TestStartWithRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "s3")
	s, err := s3server.Start(context.Background(), s3server.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("the caller's root is gone after Close: %v", err)
	}
}

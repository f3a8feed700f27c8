package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestWriteReplacesWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want the writer's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after a failed write the file holds %q, want the old content", b)
	}
	if err := WriteBytes(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q, want new", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1 (no temporary files left)", len(entries))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if err := WriteBytes(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

// A write that fails at the sync or the rename leaves the old file whole
// and no temporary file, and its error names the target.
func TestFailedStepKeepsOldFile(t *testing.T) {
	for _, step := range []string{"sync", "rename"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "r.txt")
			if err := WriteBytes(path, []byte("old")); err != nil {
				t.Fatal(err)
			}
			boom := errors.New("boom")
			switch step {
			case "sync":
				old := syncFile
				syncFile = func(*os.File) error { return boom }
				t.Cleanup(func() { syncFile = old })
			case "rename":
				old := rename
				rename = func(string, string) error { return boom }
				t.Cleanup(func() { rename = old })
			}
			err := WriteBytes(path, []byte("new"))
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "writing "+path) || strings.Contains(err.Error(), ".tmp-") {
				t.Fatalf("WriteBytes = %v, want the injected error naming %s and no temporary file", err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != "old" {
				t.Errorf("the file holds %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("%d entries left, want 1", len(entries))
			}
		})
	}
}

// A symbolic link is written through: its target changes, the link stays.
// A device node is written in place, not replaced.
func TestWriteThroughLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	link := filepath.Join(dir, "link.txt")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target.txt", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := WriteBytes(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("target holds %q, want new", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("target's mode %v, want its 0600 kept", fi.Mode().Perm())
	}
	before, err := os.Stat(os.DevNull)
	if err != nil {
		t.Skipf("the device part needs %s, which this system lacks: %v", os.DevNull, err)
	}
	if err := WriteBytes(os.DevNull, []byte("x")); err != nil {
		t.Fatalf("writing %s: %v", os.DevNull, err)
	}
	if after, err := os.Stat(os.DevNull); err != nil || after.Mode() != before.Mode() {
		t.Errorf("%s is now %v, was %v", os.DevNull, after.Mode(), before.Mode())
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "new.txt"), ""},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "f.txt"), "does not exist"},
		{os.DevNull, ""},
	} {
		err := Check(tc.path)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Check left %d files", len(entries))
	}
}

// A temporary file left by a process that is gone is swept by the next
// write to its target; one of a live process (this one) is not.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	stale := filepath.Join(dir, ".r.txt.tmp-999999999-123")
	mine := filepath.Join(dir, ".r.txt.tmp-"+strconv.Itoa(os.Getpid())+"-456")
	other := filepath.Join(dir, ".other.txt.tmp-999999999-1")
	for _, p := range []string{stale, mine, other} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteBytes(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, mine: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s present %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

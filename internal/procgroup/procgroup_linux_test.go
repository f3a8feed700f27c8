package procgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestContained: a command started Contained is the first process of a
// PID namespace of its own; root gets no user namespace (one that maps
// only root would cost it its access to other users' files), anyone else
// one that maps its own ids. As root, the command reads a file another
// user owns with mode 0600, as it would outside.
func TestContained(t *testing.T) {
	a := Contained()
	if a.Cloneflags&syscall.CLONE_NEWPID == 0 || !a.Setpgid {
		t.Fatalf("Contained() = %+v, want a PID namespace and a process group", a)
	}
	root := os.Getuid() == 0
	if user := a.Cloneflags&syscall.CLONE_NEWUSER != 0; user == root {
		t.Fatalf("uid %d: Contained() has a user namespace %v, want %v", os.Getuid(), user, !root)
	}
	if !root {
		if len(a.UidMappings) != 1 || a.UidMappings[0].HostID != os.Getuid() || a.UidMappings[0].ContainerID != os.Getuid() {
			t.Fatalf("uid mappings %+v, want the caller's uid to itself", a.UidMappings)
		}
		return
	}
	f := filepath.Join(t.TempDir(), "theirs")
	if err := os.WriteFile(f, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(f, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cat", f)
	cmd.SysProcAttr = Contained()
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "data" {
		t.Fatalf("cat of another user's file, Contained, as root: %q, %v", out, err)
	}
}

package machine

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	m := Describe()
	if m.CPU == "" || m.Cores <= 0 || m.GOMAXPROCS <= 0 || m.OS != runtime.GOOS || m.Arch != runtime.GOARCH ||
		m.Distro == "" || !strings.HasPrefix(m.Go, "go") || m.Commit == "" || m.Date.IsZero() {
		t.Errorf("incomplete description: %+v", m)
	}
}

func TestDistro(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	release := write("os-release", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n")
	kernel := write("osrelease", "6.1.0-18-amd64\n")
	empty := write("empty", "")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		release, kernel, want string
	}{
		{release, kernel, "Debian GNU/Linux 12 (bookworm), " + runtime.GOOS + " 6.1.0-18-amd64"},
		{missing, kernel, runtime.GOOS + " 6.1.0-18-amd64"},
		{release, missing, "Debian GNU/Linux 12 (bookworm)"},
		{missing, empty, runtime.GOOS},
	} {
		if got := distro(tc.release, tc.kernel); got != tc.want {
			t.Errorf("distro(%s, %s) = %q, want %q", filepath.Base(tc.release), filepath.Base(tc.kernel), got, tc.want)
		}
	}
}

package machine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemAvailable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       int64
		ok         bool
	}{
		{"meminfo", "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n", 20000000 << 10, true},
		{"no line", "MemTotal: 5 kB\n", 0, false},
		{"odd unit", "MemAvailable: 5 MB\n", 0, false},
		{"garbage", "MemAvailable: lots kB\n", 0, false},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, ok := memAvailable(p)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := memAvailable(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file gave a memory size")
	}
}

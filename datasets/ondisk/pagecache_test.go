package ondisk

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

// TestEvictDropsPages checks Evict with mincore: after Warm every byte of
// the dataset is resident, after Evict none is (on a disk file system;
// tmpfs pages cannot be dropped, and t.TempDir is on disk here).
func TestEvictDropsPages(t *testing.T) {
	if !EvictAvailable {
		_, err := Evict(context.Background(), t.TempDir())
		oneLine(t, err, "page-cache eviction is not available on "+runtime.GOOS)
		return
	}
	dir := filepath.Join(t.TempDir(), "ds")
	big := tiny
	big.Width, big.Height = 256, 256
	if _, err := Write(context.Background(), dir, big, WriteOptions{Format: "raw", Layout: "shards", ShardSize: 4}); err != nil {
		t.Fatal(err)
	}
	w, err := Warm(context.Background(), dir)
	must(t, err)
	r, total, err := Resident(dir)
	must(t, err)
	if w.Bytes != total || w.Files != 3 {
		t.Errorf("Warm read %d bytes in %d files, want %d in 3", w.Bytes, w.Files, total)
	}
	if r != total {
		t.Errorf("after Warm %d of %d bytes resident", r, total)
	}
	e, err := Evict(context.Background(), dir)
	must(t, err)
	if e.Bytes != total {
		t.Errorf("Evict covered %d bytes, want %d", e.Bytes, total)
	}
	r, _, err = Resident(dir)
	must(t, err)
	if r != 0 {
		t.Errorf("after Evict %d of %d bytes resident, want 0 (tmpfs?)", r, total)
	}
}

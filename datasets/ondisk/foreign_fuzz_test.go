package ondisk

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
)

// FuzzBuildIndexShard indexes a WebDataset directory whose one shard holds
// arbitrary bytes: BuildIndex must not panic, and whatever it indexes must
// validate and read back (or fail) without panicking.
func FuzzBuildIndexShard(f *testing.F) {
	t := &testing.T{}
	f.Add(tarOf(t, "a.jpg", encodeTest(t, "jpeg", 4, 4, 1), "a.cls", []byte("2")))
	f.Add(tarOf(t, "x/y.z.png", []byte("not a png"), "x/y.txt", []byte("dog")))
	f.Add([]byte("not a tar at all"))
	f.Fuzz(func(t *testing.T, data []byte) {
		t.Setenv("HEADSPACE_CACHE", t.TempDir())
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.tar"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := BuildIndex(context.Background(), dir)
		if err != nil {
			return
		}
		if err := x.validate(); err != nil {
			t.Fatalf("BuildIndex made an invalid index: %v", err)
		}
		d, err := OpenWith(dir, Options{MaxFailures: 0, Width: 4, Height: 4})
		if err != nil {
			return
		}
		defer d.Close()
		s := datasets.NewSample(4, 4)
		for i := range d.Len() {
			_ = d.Fill(i, s)
		}
	})
}

package ondisk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
)

// oneLine fails unless err is a single line containing every want.
func oneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", want)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
}

// victim is the sample the broken-input tests damage: the last sample of
// the second shard (shards of 3), so the next one, which replaces it within
// MaxFailures, is in another shard.
const victim = 5

// memberOffset finds the victim's image member in its shard.
func memberOffset(t *testing.T, d *Dataset) (string, int64, int64) {
	l := d.loc[victim]
	return filepath.Join(d.dir, d.m.Files[l.shard].Name), l.off, l.size
}

func TestBrokenInputs(t *testing.T) {
	for _, tc := range []struct {
		name, format, layout string
		breakIt              func(t *testing.T, d *Dataset)
		want                 []string // besides "sample 5"
	}{
		{"missing file", "png", "files", func(t *testing.T, d *Dataset) {
			must(t, os.Remove(filepath.Join(d.dir, "000005.png")))
		}, []string{"000005.png"}},
		{"truncated file", "jpeg", "files", func(t *testing.T, d *Dataset) {
			must(t, os.Truncate(filepath.Join(d.dir, "000005.jpg"), 10))
		}, []string{"000005.jpg", "truncated: 10 of"}},
		{"corrupt file", "png", "files", func(t *testing.T, d *Dataset) {
			p := filepath.Join(d.dir, "000005.png")
			b, err := os.ReadFile(p)
			must(t, err)
			for k := 40; k < len(b); k++ {
				b[k] ^= 0x5a
			}
			must(t, os.WriteFile(p, b, 0o644))
		}, []string{"000005.png", "decode", "png"}},
		{"raw file of the wrong size", "raw", "files", func(t *testing.T, d *Dataset) {
			f, err := os.OpenFile(filepath.Join(d.dir, "000005.rgb"), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.Write([]byte("extra"))
			f.Close()
			d.m.Files[victim].Size += 5 // as if the manifest agreed
		}, []string{"000005.rgb", "want 1152"}},
		{"corrupt member", "jpeg", "shards", func(t *testing.T, d *Dataset) {
			p, off, size := memberOffset(t, d)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			must(t, err)
			f.WriteAt(make([]byte, size), off) // zeros: no JPEG marker
			f.Close()
		}, []string{"shard-000001.tar member 000005.jpg", "decode", "jpeg"}},
		{"truncated shard", "raw", "shards", func(t *testing.T, d *Dataset) {
			p, off, _ := memberOffset(t, d)
			must(t, os.Truncate(p, off+100))
		}, []string{"shard-000001.tar member 000005.rgb", "truncated: 100 of 1152 bytes"}},
		{"missing shard", "png", "shards", func(t *testing.T, d *Dataset) {
			must(t, os.Remove(filepath.Join(d.dir, "shard-000001.tar")))
		}, []string{"shard-000001.tar member 000005.png", "shard unreadable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			write(t, dir, tc.format, tc.layout)
			d0 := open(t, dir, Options{})
			tc.breakIt(t, d0)
			// Reopen so the shard index sees the damage; keep the
			// manifest edits of breakIt.
			d := open(t, dir, Options{})
			d.m = d0.m
			s := datasets.NewSample(tiny.Width, tiny.Height)
			for i := range 3 { // the first shard or files, untouched
				if err := d.Fill(i, s); err != nil {
					t.Fatalf("sample %d before the damage: %v", i, err)
				}
			}
			oneLine(t, d.Fill(victim, s), append(tc.want, "sample 5")...)

			// With a budget of one failure the sample is replaced by
			// the next one and counted; the budget spent, the next
			// failure stops the run.
			ds := open(t, dir, Options{MaxFailures: 1})
			ds.m = d0.m
			if err := ds.Fill(victim, s); err != nil {
				t.Fatalf("MaxFailures 1: %v", err)
			}
			want := datasets.NewSample(tiny.Width, tiny.Height)
			d.Fill(victim+1, want)
			if s.Label != want.Label || string(s.Image.Pix) != string(want.Image.Pix) {
				t.Error("the skipped sample was not replaced by the next one")
			}
			if ds.Failures() != 1 {
				t.Errorf("Failures %d, want 1", ds.Failures())
			}
			oneLine(t, ds.Fill(victim, s), "sample 5")
			if ds.Failures() != 1 {
				t.Errorf("Failures %d after the budget, want 1", ds.Failures())
			}
			if tc.name != "raw file of the wrong size" {
				oneLine(t, d.Verify(context.Background()), "verify")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	oneLine(t, err, dir, "no manifest")
	must(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte("{"), 0o644))
	_, err = Open(dir)
	oneLine(t, err, ManifestName)
	must(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"version": 9}`), 0o644))
	_, err = Open(dir)
	oneLine(t, err, "format version 9")
	_, err = OpenWith(dir, Options{MaxFailures: -1})
	oneLine(t, err, "MaxFailures -1")
}

func TestFetchAndDecodeArguments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	write(t, dir, "png", "shards")
	d := open(t, dir, Options{})
	_, err := d.Fetch(context.Background(), tiny.N, nil)
	oneLine(t, err, "sample 7: out of range")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = d.Fetch(ctx, 0, nil)
	oneLine(t, err, "canceled")
	err = d.Decode(0, nil, datasets.NewSample(8, 8))
	oneLine(t, err, "buffer is 8x8")
	err = d.Fill(-1, datasets.NewSample(tiny.Width, tiny.Height))
	oneLine(t, err, "out of range")
}

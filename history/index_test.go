package history

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// indexedStore adds n runs of Test CPU to a new store and returns the
// store, its machine folder and the source folder.
func indexedStore(t *testing.T, n int) (store, mdir, src string) {
	t.Helper()
	src, store = t.TempDir(), filepath.Join(t.TempDir(), "store")
	for r := range n {
		if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", r, -1, 0, ""), AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return store, filepath.Join(store, testKey), src
}

// wantConsistent fails unless mdir's index is what its files say.
func wantConsistent(t *testing.T, mdir string, runs int) {
	t.Helper()
	got, err := loadIndexFile(mdir)
	if err != nil {
		t.Fatalf("the index: %v", err)
	}
	want, err := buildIndexOf(mdir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Runs, want.Runs) || len(got.Runs) != runs {
		t.Errorf("the index lists %d runs, the files %d (want %d): it disagrees with them", len(got.Runs), len(want.Runs), runs)
	}
	if tmps, _ := filepath.Glob(filepath.Join(mdir, ".add-*.tmp")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// editIndex rewrites mdir's index through edit.
func editIndex(t *testing.T, mdir string, edit func(*index)) {
	t.Helper()
	idx, err := loadIndexFile(mdir)
	if err != nil {
		t.Fatal(err)
	}
	edit(idx)
	data, _ := json.Marshal(idx)
	if err := os.WriteFile(filepath.Join(mdir, IndexName), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIndexKeptByAdd: every add leaves the folder's index listing exactly
// its runs, and a good index is used without a message.
func TestIndexKeptByAdd(t *testing.T) {
	store, mdir, src := indexedStore(t, 3)
	wantConsistent(t, mdir, 3)
	var log bytes.Buffer
	if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 3, -1, 0, ""), AddOptions{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Errorf("a good index gave a message: %s", log.String())
	}
	wantConsistent(t, mdir, 4)
}

// TestIndexNotTrusted: an index that is missing, cannot be parsed, or
// disagrees with the folder is rebuilt from the files with a message
// naming why, and the add decides by the files: in every case a copy of
// an earlier run is still refused as a duplicate, and a run of the
// series' setup accepted.
func TestIndexNotTrusted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, mdir string)
		want  string
	}{
		{"missing", func(t *testing.T, mdir string) { os.Remove(filepath.Join(mdir, IndexName)) }, "missing; rebuilt it from the 3 run files"},
		{"corrupt", func(t *testing.T, mdir string) {
			os.WriteFile(filepath.Join(mdir, IndexName), []byte(`{"format": "headspace history index 1", "runs": [{"na`), 0o644)
		}, "unreadable"},
		{"other format", func(t *testing.T, mdir string) {
			editIndex(t, mdir, func(idx *index) { idx.Format = "headspace history index 0" })
		}, `its format is "headspace history index 0"`},
		{"lacks a run", func(t *testing.T, mdir string) { editIndex(t, mdir, func(idx *index) { idx.Runs = idx.Runs[1:] }) }, "it lacks 20261101T031700Z-c000000.txt"},
		{"lists a gone run", func(t *testing.T, mdir string) {
			editIndex(t, mdir, func(idx *index) {
				e := idx.Runs[0]
				e.Name = "20261001T031700Z-gone.txt"
				idx.Runs = append([]indexEntry{e}, idx.Runs...)
			})
		}, "it lists 20261001T031700Z-gone.txt, which the folder does not hold"},
		{"wrong size", func(t *testing.T, mdir string) { editIndex(t, mdir, func(idx *index) { idx.Runs[1].Size++ }) }, "as 1"},
		{"latest setup", func(t *testing.T, mdir string) {
			// Trusted, this would refuse the next run of the series.
			editIndex(t, mdir, func(idx *index) { idx.Runs[2].Setup = map[string]string{"raw-size": "64x64"} })
		}, "what it records of the latest run, 20261103T031700Z-c000002.txt, is not what the file holds"},
		{"latest edited in place", func(t *testing.T, mdir string) {
			p := filepath.Join(mdir, "20261103T031700Z-c000002.txt")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("level=none-2 4 "), []byte("level=none-2 5 "), 1), 0o644)
		}, "is not what the file holds"},
		{"wrong hash", func(t *testing.T, mdir string) {
			// Trusted, this would name run 1 as the copy of run 0.
			editIndex(t, mdir, func(idx *index) { idx.Runs[1].SHA256 = idx.Runs[0].SHA256 })
		}, "it records the content of 20261102T031700Z-c000001.txt wrongly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, mdir, src := indexedStore(t, 3)
			tc.spoil(t, mdir)
			var log bytes.Buffer
			if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 0, -1, 0, ""), AddOptions{Log: &log}); err == nil || !strings.Contains(err.Error(), "is already in the store as "+filepath.Join(mdir, "20261101T031700Z-c000000.txt")) {
				t.Errorf("a copy of run 0: %v, want it refused as a duplicate", err)
			}
			if !strings.Contains(log.String(), tc.want) || !strings.Contains(log.String(), "rebuilt it from the") {
				t.Errorf("message %q, want one naming %q and the rebuild", log.String(), tc.want)
			}
			wantConsistent(t, mdir, 3)
			log.Reset()
			if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 3, -1, 0, ""), AddOptions{Log: &log}); err != nil {
				t.Errorf("the next run of the series: %v", err)
			}
			if log.Len() != 0 {
				t.Errorf("a second message after the rebuild: %s", log.String())
			}
			wantConsistent(t, mdir, 4)
		})
	}
}

// TestKilledAdd: an add killed after writing its temporary file, or after
// linking its run into place but before rewriting the index, leaves a
// store whose next add removes the temporary file, takes the linked run
// into the index (with a message), and refuses that run again.
func TestKilledAdd(t *testing.T) {
	store, mdir, src := indexedStore(t, 2)
	// Killed before the link: only a temporary file.
	r2 := runFile(t, src, "Test CPU", 2, -1, 0, "")
	b2, _ := os.ReadFile(r2)
	os.WriteFile(filepath.Join(mdir, ".add-12345.tmp"), b2, 0o600)
	// Killed after the link: the run is in place, the index lacks it.
	os.WriteFile(filepath.Join(mdir, "20261103T031700Z-c000002.txt"), b2, 0o644)
	os.WriteFile(filepath.Join(mdir, ".add-67890.tmp"), b2, 0o600)

	var log bytes.Buffer
	if _, err := Add(context.Background(), store, r2, AddOptions{Log: &log}); err == nil || !strings.Contains(err.Error(), "already in the store") {
		t.Errorf("the run the killed add linked, again: %v, want a refusal", err)
	}
	if !strings.Contains(log.String(), "it lacks 20261103T031700Z-c000002.txt") {
		t.Errorf("message %q, want the missing run named", log.String())
	}
	wantConsistent(t, mdir, 3)
	if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 3, -1, 0, ""), AddOptions{}); err != nil {
		t.Fatal(err)
	}
	wantConsistent(t, mdir, 4)
	runs, err := Runs(store, testKey)
	if err != nil || len(runs) != 4 {
		t.Errorf("Runs: %d, %v; want the 4 runs", len(runs), err)
	}
}

// TestGeneratedStoreIndexed: a generated store has no index; its first
// add builds it (saying so) and the next finds it good.
func TestGeneratedStoreIndexed(t *testing.T) {
	g := Generator{Nights: 10, Series: 6, Seed: 2}
	dir := filepath.Join(t.TempDir(), "store")
	if err := g.Write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	next := Generator{Nights: 12, Series: 6, Seed: 2}
	var log bytes.Buffer
	for n := 10; n < 12; n++ {
		f := filepath.Join(t.TempDir(), "next.txt")
		os.WriteFile(f, next.File(n), 0o644)
		if _, err := Add(context.Background(), dir, f, AddOptions{Log: &log}); err != nil {
			t.Fatal(err)
		}
		if n == 10 && !strings.Contains(log.String(), "missing; rebuilt it from the 10 run files") {
			t.Errorf("first add's message %q, want the index built", log.String())
		}
	}
	if strings.Count(log.String(), "\n") != 1 {
		t.Errorf("messages %q, want one", log.String())
	}
	wantConsistent(t, filepath.Join(dir, MachineKey(g.Machine())), 12)
}

// TestLatest: Latest is the last of Runs, with a good index, with none,
// and with one that lies about the latest run (not trusted, not written).
func TestLatest(t *testing.T) {
	store, mdir, _ := indexedStore(t, 3)
	runs, err := Runs(store, testKey)
	if err != nil {
		t.Fatal(err)
	}
	want := runs[len(runs)-1]
	check := func(what string) {
		t.Helper()
		got, ok, err := Latest(store, testKey)
		if err != nil || !ok || got.Path != want.Path || got.Commit != want.Commit || !got.Date.Equal(want.Date) || got.Machine != want.Machine {
			t.Errorf("%s: Latest = %+v, %v, %v; want %s", what, got, ok, err, want.Path)
		}
	}
	check("good index")
	editIndex(t, mdir, func(idx *index) { idx.Runs = idx.Runs[:2] })
	check("index lacking the latest run")
	os.Remove(filepath.Join(mdir, IndexName))
	check("no index")
	if _, err := os.Stat(filepath.Join(mdir, IndexName)); err == nil {
		t.Error("Latest wrote an index")
	}
	if _, ok, err := Latest(store, "no-such-machine"); ok || err != nil {
		t.Errorf("a missing folder: %v, %v; want none", ok, err)
	}
}

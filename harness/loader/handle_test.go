package loader

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/internal/setting"
)

// TestWithDataResolvesOnce checks that the dataset WithData resolved is
// what the settings and the loaders take: with its manifest removed
// afterwards, DataSettings is unchanged and a loader still reads every
// sample, where a Config carrying no handle (Data set by hand, as after
// crossing a process boundary) inspects Data again and finds it
// unreadable. It checks too that the handle is never encoded: a rank's
// spec (JSON of Config) is the same bytes as before it existed.
func TestWithDataResolvesOnce(t *testing.T) {
	cfg := onDisk(t, "png", "files", 6, 2)
	want := cfg.DataSettings()
	if v := value(want, "data-format"); v != "png" {
		t.Fatalf("data-format %q before, want png", v)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var decoded Config
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(decoded); string(again) != string(js) {
		t.Fatalf("a Config with its handle encodes as\n%s\none without it as\n%s", js, again)
	}
	if err := os.Remove(filepath.Join(cfg.Data, ondisk.ManifestName)); err != nil {
		t.Fatal(err)
	}
	if got := cfg.DataSettings(); !slices.Equal(got, want) {
		t.Fatalf("DataSettings after the manifest went:\n%v\nwant (WithData's)\n%v", got, want)
	}
	if v := value(decoded.DataSettings(), "data-format"); v != "unreadable" {
		t.Fatalf("a Config without a handle: data-format %q, want unreadable (inspected again)", v)
	}
	data, _, _, err := drain(t, level.None, cfg, 3)
	if err != nil || len(data) != 3 {
		t.Fatalf("loader from the handle: %d batches, %v; want 3", len(data), err)
	}
	if _, _, _, err := drain(t, level.None, decoded, 1); err == nil {
		t.Fatal("a loader of a Config without a handle read a dataset without its manifest")
	}
	h, err := cfg.DataHandle(t.Context())
	if err != nil || h.URI() != cfg.Data {
		t.Fatalf("DataHandle: %v, %v", h, err)
	}
	moved := cfg
	moved.Data = filepath.Join(t.TempDir(), "elsewhere")
	if _, err := moved.DataHandle(t.Context()); err == nil {
		t.Fatal("DataHandle of another Data: the old handle, want that Data resolved (an error)")
	}
}

// value is the value of key in s, or "".
func value(s []setting.Setting, key string) string {
	for _, kv := range s {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

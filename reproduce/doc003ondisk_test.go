package reproduce

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/workloads"
)

// TestOnDisk003Shared reads step (e) from result files: one written since
// each level is measured once per set of the dimensions it depends on
// (its cases' rows filled from the shared points, and the report says
// so), one from before (every case at every level, no content or decoder
// in the names: read as noise and go, nothing shared, no such sentence),
// and one whose point leaves out a dimension its level depends on
// (refused by the file's codec, workloads.CachingCodec).
func TestOnDisk003Shared(t *testing.T) {
	const point = "workers=2/transforms=fast/placement=host/pinned=true-2"
	rec := func(name string, lv level.Level, sps float64) string {
		if name != "" {
			name += "/"
		}
		return fmt.Sprintf("BenchmarkLadderOnDisk/%slevel=%s/%s 1 1e+08 ns/op %g steps/s\n", name, lv, point, sps)
	}
	files := "format=jpeg/content=noise/decoder=go/layout=files/raw=64/page-cache=warm"
	shards := "format=jpeg/content=noise/decoder=go/layout=shards/raw=64/page-cache=warm"
	for _, tc := range []struct {
		name   string
		recs   string
		rows   map[string]map[level.Level]float64 // case → medians
		shared int                                // levels each row shares
		text   string                             // in the report; "" none of sharedLevels003's
		err    string
	}{
		{"shared", rec("raw=64", level.Device, 4) + rec("raw=64", level.Raw, 3) +
			rec("format=jpeg/content=noise/decoder=go/raw=64", level.Encoded, 2) +
			rec(files, level.None, 1) + rec(shards, level.None, 1.5),
			map[string]map[level.Level]float64{
				files:  {level.None: 1, level.Encoded: 2, level.Raw: 3, level.Device: 4},
				shards: {level.None: 1.5, level.Encoded: 2, level.Raw: 3, level.Device: 4},
			}, 3, "`encoded` once per format, content, decoder and raw size; `raw` and `device` once per raw size; `none` in every case", ""},
		{"before the sharing", rec("format=png/layout=files/raw=64/page-cache=warm", level.Device, 4) +
			rec("format=png/layout=files/raw=64/page-cache=warm", level.None, 1),
			map[string]map[level.Level]float64{
				"format=png/content=noise/decoder=go/layout=files/raw=64/page-cache=warm": {level.None: 1, level.Device: 4},
			}, 0, "", ""},
		{"a dimension missing", rec("raw=64", level.Device, 4) + rec("format=jpeg/content=noise/decoder=go/raw=64", level.None, 1),
			nil, 0, "", "level none depends on format, content, decoder, layout, raw size, page cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "003.txt")
			cfg := "document: 003\ncrop: 32\nbatch: 4\nworkers: 2\nondisk-samples: 12\nondisk-count: 1\nondisk-steps: 2\nondisk-warmup: 1\n\n"
			if err := os.WriteFile(path, []byte(cfg+tc.recs), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := readResultFile(path, doc003(t))
			if err != nil {
				t.Fatal(err)
			}
			o, err := decoded(f, workloads.CachingCodec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			od := onDisk003Step(f, o.OnDisk)
			if err := f.check(); err != nil || od == nil {
				t.Fatalf("step %v: %v", od, err)
			}
			if len(od.Rows) != len(tc.rows) {
				t.Fatalf("%d rows, want %d", len(od.Rows), len(tc.rows))
			}
			for _, row := range od.Rows {
				want, ok := tc.rows[row.Case.Name()]
				if !ok || len(row.Median) != len(want) || len(row.Shared) != tc.shared || row.Ratio[level.None] != want[level.None]/want[level.Device] {
					t.Errorf("%s: medians %v shared %v ratios %v, want %v", row.Case.Name(), row.Median, row.Shared, row.Ratio, want)
				}
				for l, v := range want {
					if row.Median[l] != v {
						t.Errorf("%s %s: %g, want %g", row.Case.Name(), l, row.Median[l], v)
					}
				}
			}
			var b strings.Builder
			m := &md{w: &b}
			Result003{}.writeOnDisk(m, od)
			got := b.String()
			if tc.text != "" && !strings.Contains(got, tc.text) || tc.text == "" && strings.Contains(got, "in every case") {
				t.Errorf("report, want %q:\n%s", tc.text, got)
			}
		})
	}
}

// doc003 is document 003 of Docs.
func doc003(t *testing.T) Doc {
	t.Helper()
	for _, d := range Docs {
		if d.ID == "003" {
			return d
		}
	}
	t.Fatal("no document 003")
	return Doc{}
}

package resultwrite

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"golang.org/x/perf/benchfmt"
)

// FuzzRead feeds arbitrary bytes to the reader. It must never panic or
// hang, whatever it returns; what it reads must, where it is writable,
// survive a write and read back. (harness/gate fuzzes the gate on the
// same seeds.) The seeds are cut to their first lines and inputs beyond
// maxFuzzInput skipped: minimising inputs derived from whole files took
// a 10 s run (issue 21, item 16).
func FuzzRead(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "gate", "testdata", "gate", "*", "*.txt"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > maxFuzzInput/2 {
			data = data[:bytes.LastIndexByte(data[:maxFuzzInput/2], '\n')+1]
		}
		f.Add(data)
	}
	f.Add([]byte("Unit ns/op better=higher\nUnit ns/op better=lower\nBenchmarkA 1 NaN ns/op +Inf ns/op\n"))
	f.Add([]byte("BenchmarkA 1 1e400 MB 0x1p-2 ns\nkey:\nBenchmark\nBenchmark 1 2 x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		rs, meta, err := resultfile.Parse(bytes.NewReader(data), "fuzz.txt")
		if err != nil && len(err.Error()) == 0 {
			t.Fatal("empty error")
		}
		if len(rs) == 0 || err != nil {
			return
		}
		var buf bytes.Buffer
		out := make([]*benchfmt.Result, 0, len(rs))
		for _, r := range rs {
			c, err := normalize(r, nil)
			if err != nil {
				return // not writable: refused, fine
			}
			out = append(out, c)
		}
		if err := encode(&buf, out, meta); err != nil {
			t.Fatal(err)
		}
		back, _, err := resultfile.Parse(bytes.NewReader(buf.Bytes()), "rewritten.txt")
		if err != nil {
			t.Fatalf("rewritten file does not read: %v\n%s", err, buf.Bytes())
		}
		if len(back) != len(rs) {
			t.Fatalf("read %d results, rewrote and read back %d:\n%s", len(rs), len(back), buf.Bytes())
		}
		for i := range back {
			if string(back[i].Name) != string(out[i].Name) || len(back[i].Values) != len(out[i].Values) {
				t.Fatalf("result %d: %s %v became %s %v", i, out[i].Name, out[i].Values, back[i].Name, back[i].Values)
			}
			for j, v := range back[i].Values {
				if w := out[i].Values[j]; v.Unit != w.Unit || v.Value != w.Value {
					t.Fatalf("result %d value %d: %+v became %+v", i, j, w, v)
				}
			}
		}
	})
}

// maxFuzzInput is the largest input FuzzRead reads.
const maxFuzzInput = 1 << 10

package workloads

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// FuzzOwnLoopAnalyzeCodec: whatever a file holds, OwnLoopAnalyzeCodec
// decodes it without panicking or refuses it in one line, the report of
// an analysis it decodes prints without panicking, and its records,
// encoded again with the file's lines, decode to the same report.
func FuzzOwnLoopAnalyzeCodec(f *testing.F) {
	for _, name := range []string{"own-loop-analyze.txt", "own-loop-analyze-node.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _, err := resultfile.Parse(bytes.NewReader(b), "fuzz.txt")
		if err != nil || len(recs) == 0 {
			return
		}
		o, err := OwnLoopAnalyzeCodec.Decode(recs)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a refusal of more than one line: %q", err)
			}
			return
		}
		var first, second bytes.Buffer
		if err := (&OwnLoopAnalyze{}).Report(o, &first); err != nil {
			t.Fatal(err)
		}
		back, err := OwnLoopAnalyzeCodec.Decode(resultfile.WithSettings(OwnLoopAnalyzeCodec.Encode(o), o.Config))
		if err != nil {
			t.Fatalf("re-encoded, does not decode: %v", err)
		}
		if err := (&OwnLoopAnalyze{}).Report(back, &second); err != nil || second.String() != first.String() {
			t.Fatalf("re-encoded, reports (%v):\n%s\nwant:\n%s", err, second.String(), first.String())
		}
	})
}

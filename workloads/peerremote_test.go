package workloads

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestPeerRemoteCodecCommittedFiles: the committed peer --remote files
// decode through PeerRemoteCodec alone (a run each record, the report
// from the file's lines) and encode as the files' records again; a
// Peer's file and a Remote's are refused, and so is a run of an
// unknown layout or of a figure that is not finite.
func TestPeerRemoteCodecCommittedFiles(t *testing.T) {
	for _, name := range []string{"peer-remote-cross-region.txt", "peer-remote-cross-region-fc16.txt"} {
		t.Run(name, func(t *testing.T) {
			o := reencodes(t, PeerRemoteCodec, filepath.Join("..", "results", name))
			if len(o.Result.Measurements) == 0 || len(o.Report.Rows) == 0 || o.Report.Command == "" || len(o.Report.Costs) != 2 {
				t.Fatalf("%d runs, %d rows, command %q, %d costs: want the file's", len(o.Result.Measurements), len(o.Report.Rows), o.Report.Command, len(o.Report.Costs))
			}
			var b strings.Builder
			if err := (PeerRemote{}).Report(o, &b); err != nil || !strings.Contains(b.String(), "# The boto3 peer: data from a bucket") {
				t.Errorf("Report: %v\n%s", err, b.String())
			}
		})
	}
	for _, name := range []string{"peer-emulated.txt", "remote-cross-region.txt"} {
		recs, err := resultfile.Read(filepath.Join("..", "results", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := PeerRemoteCodec.Decode(recs); err == nil || !strings.Contains(err.Error(), "not a record of PeerRemote") {
			t.Errorf("%s through PeerRemoteCodec: %v, want it refused", name, err)
		}
	}
	for _, tc := range []struct{ line, want string }{
		{"BenchmarkPeerRemote/layout=tape/impl=fast/workers=1 6 1 ttfb-ns 2 samples/s 3 cpu-s", `unknown layout "tape"`},
		{"BenchmarkPeerRemote/layout=shards/impl=fast/workers=1 6 1 ttfb-ns NaN samples/s 3 cpu-s", "must be finite"},
		{"BenchmarkPeerRemote/layout=shards/impl=fast/workers=1 1 1 ttfb-ns 2 samples/s 3 cpu-s", "want at least 2"},
		{"BenchmarkPeerRemote/layout=shards/impl=boto/workers=1 6 1 ttfb-ns 2 samples/s 3 cpu-s", `unknown impl "boto"`},
	} {
		recs := throughText(t, tc.line+"\n")
		if _, err := PeerRemoteCodec.Decode(recs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.line, err, tc.want)
		}
	}
	// A Peer's runs are held to the same (peer --from read them by hand,
	// refusing these, before PeerCodec).
	for _, tc := range []struct{ line, want string }{
		{"BenchmarkPeer/impl=fast/workers=1 6 1 ttfb-ns NaN samples/s 3 cpu-s", "must be finite"},
		{"BenchmarkPeer/impl=fast/workers=0 6 1 ttfb-ns 2 samples/s 3 cpu-s", "want a positive count"},
	} {
		if _, err := PeerCodec.Decode(throughText(t, tc.line+"\n")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.line, err, tc.want)
		}
	}
	// Records alone, not read from a file, have no report.
	if err := (PeerRemote{}).Report(PeerRemoteOutcome{}, io.Discard); err == nil {
		t.Error("Report with no report: no error")
	}
}

// throughText is the records of text, a result file's body with no
// configuration lines, as a reader reads them.
func throughText(t *testing.T, text string) []*benchfmt.Result {
	t.Helper()
	rd := benchfmt.NewReader(strings.NewReader(text), "text.txt")
	var out []*benchfmt.Result
	for rd.Scan() {
		r, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			t.Fatalf("%s: %v", text, rd.Result())
		}
		out = append(out, r.Clone())
	}
	return out
}

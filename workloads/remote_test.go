package workloads

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestRemoteQuick runs the quick grid end to end against the real
// server: a record for every point of the grid and every check at level
// none, level local per dataset and device once, each fetching record
// with its requests, latency and bytes per sample, each streamed as it
// is made and read back by RemoteCodec as its point's run.
func TestRemoteQuick(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	r := QuickRemote()
	var streamed []*benchfmt.Result
	env := Env{Device: RemoteDevice(), Dir: t.TempDir(), Result: func(rec *benchfmt.Result) error { streamed = append(streamed, rec); return nil }}
	recs, err := r.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	// Each record was streamed as it was made, and reads back as the
	// run of its point.
	if !reflect.DeepEqual(streamed, recs) {
		t.Errorf("streamed %d records, Run returned %d", len(streamed), len(recs))
	}
	o, err := RemoteCodec.Decode(recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range o.Runs {
		if got := strings.TrimPrefix(string(run.Record.Name), "Benchmark"); !strings.HasPrefix(got, run.under()+"/level="+run.Point.Level.String()+"/") {
			t.Errorf("%s decoded as the run of %s at level %s", got, run.under(), run.Point.Level)
		}
	}
	want := map[string]bool{}
	for _, f := range r.Formats {
		for _, l := range r.Layouts {
			ds := RemoteDataset{f, l.Name}
			want["Remote/"+ds.Name()+"/level=local"] = true
			for _, rtt := range r.RTTs {
				for _, c := range r.Concurrency {
					want["Remote/"+ds.Name()+"/rtt="+rtt.String()+"/concurrency="+itoa(c)+"/level=none"] = true
				}
			}
			for _, ck := range r.Checks {
				want["Remote/"+ds.Name()+"/check="+ck.Name+"/concurrency="+itoa(ck.Concurrency)+"/level=none"] = true
			}
		}
	}
	want["Remote/level=device"] = true
	got := map[string]*benchfmt.Result{}
	for _, rec := range recs {
		name := strings.TrimPrefix(string(rec.Name), "Benchmark")
		name = name[:strings.Index(name, "/workers=")]
		if got[name] != nil {
			t.Errorf("%s twice", name)
		}
		got[name] = rec
	}
	for name := range want {
		rec := got[name]
		if rec == nil {
			t.Errorf("no record %s", name)
			continue
		}
		if !strings.HasSuffix(name, "level=none") {
			continue
		}
		for _, unit := range []string{"samples/s", "requests/sample", "req-mean-ns", RemoteBytesUnit} {
			if v, ok := resultfile.Value(rec, unit); !ok || v <= 0 {
				t.Errorf("%s: %s = %v, %v; want a positive value", name, unit, v, ok)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records, want %d", len(got), len(want))
	}
	// Whole-shard reads cost fewer requests than ranged ones: one per
	// shard, not one per sample.
	point := "/rtt=0s/concurrency=1/level=none"
	ranged, _ := resultfile.Value(got["Remote/format=jpeg/layout=shards-16KB"+point], "requests/sample")
	whole, _ := resultfile.Value(got["Remote/format=jpeg/layout=shards-16KB-whole"+point], "requests/sample")
	if !(ranged >= 1 && whole > 0 && whole < 0.5) {
		t.Errorf("requests/sample: ranged %.2f, whole %.2f; want at least 1 and under 0.5", ranged, whole)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

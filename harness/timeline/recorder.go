package timeline

import (
	"fmt"
	"sort"

	"github.com/headspace-bench/headspace/harness/pipeline"
)

// FromRecorder turns what a Recorder kept of a run into the timeline that the
// simulation's renderer draws: one track per worker of each stage, in
// pipeline order, then the model. Spans are coloured by worker; batch is
// the batch size, to label each sample's span with its batch.
func FromRecorder(name string, rec *pipeline.Recorder, batch int) *Timeline {
	order := map[string]int{"index": 0, "load": 1, "transform": 2, "collate": 3, "batch": 4, "model": 5}
	tracks := rec.Tracks()
	sort.SliceStable(tracks, func(i, j int) bool {
		a, b := tracks[i], tracks[j]
		if order[a.Stage] != order[b.Stage] {
			return order[a.Stage] < order[b.Stage]
		}
		return a.Worker < b.Worker
	})
	t := &Timeline{Name: name}
	for _, tr := range tracks {
		label := fmt.Sprintf("%s %d", tr.Stage, tr.Worker)
		if tr.Stage == "model" || tr.Stage == "batch" {
			label = tr.Stage
		}
		t.Tracks = append(t.Tracks, label)
		for _, s := range tr.Spans {
			b := s.Index
			if tr.Stage != "model" && batch > 0 {
				b = s.Index / batch
			}
			t.Spans = append(t.Spans, Span{Track: label, Label: tr.Stage, Start: s.Start, End: s.End, Batch: b, Color: tr.Worker})
			t.End = max(t.End, s.End)
		}
	}
	return t
}

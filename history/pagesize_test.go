package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/history/changepoint"
)

// TestYearPageOnFullPrecisionSamples: a year of nights whose samples are
// written at full precision (17 significant digits, as a run's own
// figures can be: YearOfNights with Digits -1) gives a page under 2 MB,
// the goal of issue 37, as the page keeps each sample to the relative
// quantum SampleDigits gives (issue 41: 2.54 MB when it kept 12). The
// change points are found with few permutations: the page's size does
// not depend on them.
func TestYearPageOnFullPrecisionSamples(t *testing.T) {
	g := YearOfNights()
	g.Digits = -1
	store := t.TempDir()
	if err := g.Write(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	h, err := Load(context.Background(), store, Options{ChangePoint: changepoint.Options{Permutations: 19}})
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := h.WritePage(context.Background(), &page, time.Now()); err != nil {
		t.Fatal(err)
	}
	runs, series, _ := h.counts()
	if runs != 365 || series != 200 {
		t.Fatalf("the store holds %d runs and %d series, want 365 and 200", runs, series)
	}
	const goal = 2_000_000
	t.Logf("page of %d runs × %d series at full precision: %d bytes", runs, series, page.Len())
	if page.Len() >= goal {
		t.Errorf("page of a year at full precision: %d bytes, want under %d", page.Len(), goal)
	}
}

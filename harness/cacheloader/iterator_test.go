package cacheloader_test

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/harness/cacheloader"
)

// source is an instrumented src: it yields 0..n-1 and records how many items
// it produced, whether its deferred clean-up ran and how often it was ranged.
type source struct {
	n       int
	reads   int  // items yielded
	cleaned bool // the deferred clean-up of the last range has run
	ranges  int
}

func (s *source) seq() iter.Seq[int] {
	return func(yield func(int) bool) {
		s.ranges++
		s.cleaned = false
		defer func() { s.cleaned = true }()
		for i := range s.n {
			s.reads++
			if !yield(i) {
				return
			}
		}
	}
}

// take collects at most limit items of seq, breaking out after the limit.
func take[T any](seq iter.Seq[T], limit int) []T {
	var out []T
	if limit <= 0 {
		return out
	}
	for v := range seq {
		out = append(out, v)
		if len(out) == limit {
			break
		}
	}
	return out
}

func TestIteratorTable(t *testing.T) {
	const limit = 100 // consumer bound for the endless cases
	for _, tc := range []struct {
		name  string
		n     int
		cfg   cacheloader.Config
		take  int
		want  []int
		reads int // items read from src
	}{
		{
			name: "0..6, 3 caches after 5", n: 7,
			cfg:  cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5},
			take: 14, want: []int{0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2, 0, 1, 2}, reads: 5,
		},
		{
			name: "0..4, 3 caches", n: 5,
			cfg:  cacheloader.Config{NumCaches: 3},
			take: 9, want: []int{0, 1, 2, 0, 1, 2, 0, 1, 2}, reads: 3,
		},
		{
			name: "stop after 10", n: 7,
			cfg:  cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 10},
			take: limit, want: []int{0, 1, 2, 3, 4, 0, 1, 2, 0, 1}, reads: 5,
		},
		{
			name: "stop after 10, caches only", n: 5,
			cfg:  cacheloader.Config{NumCaches: 3, StopAfter: 10},
			take: limit, want: []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, reads: 3,
		},
		{
			name: "stop when the caches would start", n: 7,
			cfg:  cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 5},
			take: limit, want: []int{0, 1, 2, 3, 4}, reads: 5,
		},
		{
			name: "src shorter than ReturnCachesAfter", n: 4,
			cfg:  cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 10},
			take: 10, want: []int{0, 1, 2, 3, 0, 1, 2, 0, 1, 2}, reads: 4,
		},
		{
			name: "src shorter than NumCaches", n: 2,
			cfg:  cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5},
			take: 7, want: []int{0, 1, 0, 1, 0, 1, 0}, reads: 2,
		},
		{
			name: "src shorter than NumCaches, stop after 7", n: 2,
			cfg:  cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 7},
			take: limit, want: []int{0, 1, 0, 1, 0, 1, 0}, reads: 2,
		},
		{
			name: "one cache", n: 5,
			cfg:  cacheloader.Config{NumCaches: 1},
			take: 4, want: []int{0, 0, 0, 0}, reads: 1,
		},
		{
			name: "src exactly ReturnCachesAfter long", n: 5,
			cfg:  cacheloader.Config{NumCaches: 2, ReturnCachesAfter: 5, StopAfter: 8},
			take: limit, want: []int{0, 1, 2, 3, 4, 0, 1, 0}, reads: 5,
		},
		{
			name: "empty src", n: 0,
			cfg:  cacheloader.Config{NumCaches: 3},
			take: limit, want: nil, reads: 0,
		},
		{
			name: "empty src, stop after 10", n: 0,
			cfg:  cacheloader.Config{NumCaches: 3, StopAfter: 10},
			take: limit, want: nil, reads: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &source{n: tc.n}
			seq, err := cacheloader.Iterator(src.seq(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := take(seq, tc.take)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if src.reads != tc.reads {
				t.Errorf("src read %d items, want %d", src.reads, tc.reads)
			}
			if !src.cleaned {
				t.Error("src's clean-up did not run")
			}
		})
	}
}

func TestIteratorConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  cacheloader.Config
	}{
		{"zero config", cacheloader.Config{}},
		{"NumCaches 0", cacheloader.Config{NumCaches: 0, ReturnCachesAfter: 5}},
		{"NumCaches negative", cacheloader.Config{NumCaches: -3}},
		{"ReturnCachesAfter negative", cacheloader.Config{NumCaches: 3, ReturnCachesAfter: -5}},
		{"StopAfter negative", cacheloader.Config{NumCaches: 3, StopAfter: -1}},
		{"ReturnCachesAfter < NumCaches", cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 2}},
		{"StopAfter < ReturnCachesAfter", cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 4}},
		{"StopAfter < default ReturnCachesAfter", cacheloader.Config{NumCaches: 3, StopAfter: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &source{n: 10}
			seq, err := cacheloader.Iterator(src.seq(), tc.cfg)
			if !errors.Is(err, cacheloader.ErrConfig) {
				t.Errorf("error = %v, want one wrapping ErrConfig", err)
			}
			if seq != nil {
				t.Error("got a sequence along with the error")
			}
			if src.ranges != 0 {
				t.Error("src was ranged at construction")
			}
		})
	}
	if _, err := cacheloader.Iterator[int](nil, cacheloader.Config{NumCaches: 1}); !errors.Is(err, cacheloader.ErrConfig) {
		t.Errorf("nil src: error = %v, want one wrapping ErrConfig", err)
	}
	// The boundaries are valid.
	for _, cfg := range []cacheloader.Config{
		{NumCaches: 3, ReturnCachesAfter: 3},
		{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 5},
		{NumCaches: 3, StopAfter: 3},
	} {
		if _, err := cacheloader.Iterator((&source{}).seq(), cfg); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

func TestIteratorIsLazy(t *testing.T) {
	src := &source{n: 10}
	if _, err := cacheloader.Iterator(src.seq(), cacheloader.Config{NumCaches: 2}); err != nil {
		t.Fatal(err)
	}
	if src.ranges != 0 || src.reads != 0 {
		t.Errorf("construction ranged src %d times, read %d items", src.ranges, src.reads)
	}
}

// TestIteratorCleanupAtSwitch checks that src's range has ended, and its
// deferred clean-up run, exactly between the last passed-through item and
// the first replayed one.
func TestIteratorCleanupAtSwitch(t *testing.T) {
	for _, cfg := range []cacheloader.Config{
		{NumCaches: 3, ReturnCachesAfter: 5},
		{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 12},
		{NumCaches: 1},
	} {
		src := &source{n: 100}
		seq, err := cacheloader.Iterator(src.seq(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rca := max(cfg.ReturnCachesAfter, cfg.NumCaches)
		i := 0
		for range seq {
			if i < rca && src.cleaned {
				t.Errorf("%+v: src cleaned up before passed-through item %d", cfg, i)
			}
			if i >= rca && !src.cleaned {
				t.Errorf("%+v: src not cleaned up at replayed item %d", cfg, i)
			}
			if src.reads > rca {
				t.Errorf("%+v: src read %d items, more than %d", cfg, src.reads, rca)
			}
			if i++; i == 20 {
				break
			}
		}
		if src.reads != rca {
			t.Errorf("%+v: src read %d items, want %d", cfg, src.reads, rca)
		}
	}
}

func TestIteratorEarlyBreak(t *testing.T) {
	cfg := cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5}
	t.Run("pass-through", func(t *testing.T) {
		src := &source{n: 10}
		seq, _ := cacheloader.Iterator(src.seq(), cfg)
		got := take(seq, 2)
		if want := []int{0, 1}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		if src.reads != 2 || !src.cleaned {
			t.Errorf("src read %d items (want 2), cleaned up %v (want true)", src.reads, src.cleaned)
		}
	})
	t.Run("last passed-through item", func(t *testing.T) {
		src := &source{n: 10}
		seq, _ := cacheloader.Iterator(src.seq(), cfg)
		got := take(seq, 5)
		if want := []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		if src.reads != 5 || !src.cleaned {
			t.Errorf("src read %d items (want 5), cleaned up %v (want true)", src.reads, src.cleaned)
		}
	})
	t.Run("replay", func(t *testing.T) {
		for _, stop := range []int{0, 50} {
			src := &source{n: 10}
			seq, _ := cacheloader.Iterator(src.seq(), cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: stop})
			got := take(seq, 8)
			if want := []int{0, 1, 2, 3, 4, 0, 1, 2}; !slices.Equal(got, want) {
				t.Errorf("StopAfter %d: got %v, want %v", stop, got, want)
			}
		}
	})
	t.Run("nested loop with return", func(t *testing.T) {
		src := &source{n: 10}
		seq, _ := cacheloader.Iterator(src.seq(), cfg)
		first := func() int {
			i := 0
			for v := range seq {
				if i++; i == 7 {
					return v
				}
			}
			return -1
		}
		if got := first(); got != 1 {
			t.Errorf("7th item = %d, want 1", got)
		}
	})
}

// TestIteratorRangeTwice documents that every range starts afresh: it
// ranges src again and keeps its own caches.
func TestIteratorRangeTwice(t *testing.T) {
	t.Run("reusable src", func(t *testing.T) {
		src := &source{n: 7}
		seq, _ := cacheloader.Iterator(src.seq(), cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 9})
		first := slices.Collect(seq)
		second := slices.Collect(seq)
		want := []int{0, 1, 2, 3, 4, 0, 1, 2, 0}
		if !slices.Equal(first, want) || !slices.Equal(second, want) {
			t.Errorf("got %v then %v, want %v twice", first, second, want)
		}
		if src.ranges != 2 || src.reads != 10 {
			t.Errorf("src ranged %d times, read %d items; want 2 and 10", src.ranges, src.reads)
		}
	})
	t.Run("single-use src", func(t *testing.T) {
		pos := 0 // a shared cursor, as a sequence over a channel would have
		src := func(yield func(int) bool) {
			for pos < 10 {
				v := pos
				pos++
				if !yield(v) {
					return
				}
			}
		}
		seq, _ := cacheloader.Iterator(src, cacheloader.Config{NumCaches: 2, ReturnCachesAfter: 3, StopAfter: 5})
		first := slices.Collect(seq)
		second := slices.Collect(seq)
		third := slices.Collect(seq)
		fourth := slices.Collect(seq)
		for _, c := range []struct{ got, want []int }{
			{first, []int{0, 1, 2, 0, 1}},
			{second, []int{3, 4, 5, 3, 4}},
			{third, []int{6, 7, 8, 6, 7}},
			{fourth, []int{9, 9, 9, 9, 9}}, // one item left: it is the only cache
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		}
		if got := slices.Collect(seq); len(got) != 0 {
			t.Errorf("exhausted src: got %v, want nothing", got)
		}
	})
	t.Run("concurrent ranges", func(t *testing.T) {
		src := func(yield func(int) bool) {
			for i := range 100 {
				if !yield(i) {
					return
				}
			}
		}
		seq, _ := cacheloader.Iterator(src, cacheloader.Config{NumCaches: 4, ReturnCachesAfter: 10, StopAfter: 1000})
		want := slices.Collect(seq)
		var wg sync.WaitGroup
		results := make([][]int, 4)
		for g := range results {
			wg.Go(func() { results[g] = slices.Collect(seq) })
		}
		wg.Wait()
		for g, got := range results {
			if !slices.Equal(got, want) {
				t.Errorf("range %d differs", g)
			}
		}
	})
}

func TestIteratorPointerItems(t *testing.T) {
	// Replayed items are the very same values, here pointers.
	items := []*int{new(int), new(int)}
	seq, _ := cacheloader.Iterator(slices.Values(items), cacheloader.Config{NumCaches: 2, StopAfter: 6})
	for i, p := range slices.Collect(seq) {
		if p != items[i%2] {
			t.Errorf("item %d is not the cached pointer", i)
		}
	}
}

// model computes what Iterator should yield for src 0..n-1 when the consumer
// stops after limit items.
func model(n int, c cacheloader.Config, limit int) []int {
	rca := c.ReturnCachesAfter
	if rca == 0 {
		rca = c.NumCaches
	}
	var out []int
	for i := 0; i < min(n, rca); i++ {
		out = append(out, i)
	}
	caches := min(n, c.NumCaches)
	for k := 0; caches > 0 && (c.StopAfter == 0 || len(out) < c.StopAfter) && len(out) < limit; k++ {
		out = append(out, k%caches)
	}
	if c.StopAfter > 0 && len(out) > c.StopAfter {
		out = out[:c.StopAfter]
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func valid(c cacheloader.Config) bool {
	rca := c.ReturnCachesAfter
	if rca == 0 {
		rca = c.NumCaches
	}
	return c.NumCaches >= 1 && c.ReturnCachesAfter >= 0 && c.StopAfter >= 0 &&
		rca >= c.NumCaches && (c.StopAfter == 0 || c.StopAfter >= rca)
}

func FuzzIterator(f *testing.F) {
	f.Add(7, 3, 5, 0, 20)
	f.Add(5, 3, 0, 0, 9)
	f.Add(7, 3, 5, 10, 100)
	f.Add(7, 3, 5, 5, 100)
	f.Add(2, 3, 5, 7, 100)
	f.Add(0, 3, 0, 0, 100)
	f.Add(0, 3, 0, 10, 100)
	f.Add(10, 3, 5, 0, 2)
	f.Add(10, 0, 0, 0, 10)
	f.Add(10, 3, 2, 0, 10)
	f.Add(10, 3, 5, 4, 10)
	f.Add(10, -1, 5, 4, 10)
	f.Fuzz(func(t *testing.T, n, numCaches, returnAfter, stopAfter, limit int) {
		// Keep the sizes small enough for a run to be quick.
		n, limit = n%200, limit%1000
		if n < 0 {
			n = -n
		}
		if limit < 0 {
			limit = -limit
		}
		cfg := cacheloader.Config{NumCaches: numCaches % 100, ReturnCachesAfter: returnAfter % 200, StopAfter: stopAfter % 500}
		src := &source{n: n}
		seq, err := cacheloader.Iterator(src.seq(), cfg)
		if !valid(cfg) {
			if !errors.Is(err, cacheloader.ErrConfig) {
				t.Fatalf("%+v: error = %v, want ErrConfig", cfg, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		rca := max(cfg.ReturnCachesAfter, cfg.NumCaches)
		// The consumer's own bound: limit, or none when it is 0 and the
		// sequence is finite; an endless sequence always needs one.
		bound := limit
		if bound == 0 {
			bound = math.MaxInt
			if cfg.StopAfter == 0 {
				bound = rca + 3*cfg.NumCaches
			}
		}
		var got []int
		for v := range seq {
			if src.reads > rca {
				t.Fatalf("%+v: src read %d items, more than ReturnCachesAfter", cfg, src.reads)
			}
			got = append(got, v)
			if len(got) == bound {
				break
			}
		}
		// Invariants, checked on their own before the exact model.
		prefix := min(n, rca, len(got))
		for i := range prefix {
			if got[i] != i {
				t.Fatalf("%+v: item %d = %d, want src's %d", cfg, i, got[i], i)
			}
		}
		for i := prefix; i < len(got); i++ {
			if got[i] >= min(n, cfg.NumCaches) {
				t.Fatalf("%+v: replayed item %d = %d is not one of the first %d", cfg, i, got[i], cfg.NumCaches)
			}
		}
		if cfg.StopAfter > 0 && len(got) > cfg.StopAfter {
			t.Fatalf("%+v: %d items, more than StopAfter", cfg, len(got))
		}
		if src.reads > rca {
			t.Fatalf("%+v: src read %d items, more than ReturnCachesAfter", cfg, src.reads)
		}
		if want := min(n, rca, len(got)); src.reads != want {
			t.Fatalf("%+v: src read %d items, want %d", cfg, src.reads, want)
		}
		if src.ranges != 1 || !src.cleaned {
			t.Fatalf("%+v: src ranged %d times, cleaned up %v; want once, true", cfg, src.ranges, src.cleaned)
		}
		if want := model(n, cfg, bound); !slices.Equal(got, want) {
			t.Fatalf("%+v, n=%d, bound=%d:\n got %v\nwant %v", cfg, n, bound, got, want)
		}
	})
}

func ExampleIterator() {
	src := slices.Values([]int{0, 1, 2, 3, 4, 5, 6})
	seq, err := cacheloader.Iterator(src, cacheloader.Config{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 11})
	if err != nil {
		panic(err)
	}
	for v := range seq {
		fmt.Print(v, " ")
	}
	fmt.Println()
	// Output: 0 1 2 3 4 0 1 2 0 1 2
}

// BenchmarkIteratorReplay measures the replay phase alone: the timer and the
// allocation counters are reset when the first cached item comes round.
func BenchmarkIteratorReplay(b *testing.B) {
	const numCaches = 16
	items := make([]int, numCaches)
	for i := range items {
		items[i] = i
	}
	seq, err := cacheloader.Iterator(slices.Values(items), cacheloader.Config{NumCaches: numCaches, StopAfter: numCaches + b.N})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i, sum := 0, 0
	for v := range seq {
		if i == numCaches {
			b.ResetTimer()
		}
		sum += v
		i++
	}
	b.StopTimer()
	if i != numCaches+b.N {
		b.Fatalf("%d items, want %d", i, numCaches+b.N)
	}
	sink = sum
}

var sink int

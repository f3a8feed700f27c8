package cacheloader

import (
	"errors"
	"slices"
	"testing"
)

func TestNormalizeDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want Config
	}{
		{Config{NumCaches: 3}, Config{NumCaches: 3, ReturnCachesAfter: 3}},
		{Config{NumCaches: 3, ReturnCachesAfter: 5}, Config{NumCaches: 3, ReturnCachesAfter: 5}},
		{Config{NumCaches: 3, StopAfter: 3}, Config{NumCaches: 3, ReturnCachesAfter: 3, StopAfter: 3}},
		{Config{NumCaches: 1, ReturnCachesAfter: 1, StopAfter: 9}, Config{NumCaches: 1, ReturnCachesAfter: 1, StopAfter: 9}},
	} {
		got, err := tc.in.normalize()
		if err != nil || got != tc.want {
			t.Errorf("%+v.normalize() = %+v, %v; want %+v, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	for _, c := range []Config{
		{},
		{NumCaches: -1},
		{NumCaches: 3, ReturnCachesAfter: -1},
		{NumCaches: 3, StopAfter: -1},
		{NumCaches: 3, ReturnCachesAfter: 2},
		{NumCaches: 3, StopAfter: 2},
		{NumCaches: 3, ReturnCachesAfter: 5, StopAfter: 4},
	} {
		if _, err := c.normalize(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v.normalize() error = %v, want ErrConfig", c, err)
		}
	}
}

func TestReplayCounts(t *testing.T) {
	caches := []int{7, 8, 9}
	for _, tc := range []struct {
		left int
		want []int
	}{
		{0, nil},
		{1, []int{7}},
		{3, []int{7, 8, 9}},
		{7, []int{7, 8, 9, 7, 8, 9, 7}},
	} {
		var got []int
		replay(caches, tc.left, false, func(v int) bool { got = append(got, v); return true })
		if !slices.Equal(got, tc.want) {
			t.Errorf("replay(left=%d) = %v, want %v", tc.left, got, tc.want)
		}
	}
	// forever stops only when yield says so.
	var got []int
	replay(caches, 0, true, func(v int) bool { got = append(got, v); return len(got) < 5 })
	if want := []int{7, 8, 9, 7, 8}; !slices.Equal(got, want) {
		t.Errorf("replay(forever) = %v, want %v", got, want)
	}
}

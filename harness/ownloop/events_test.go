package ownloop_test

import (
	"testing"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// TestLoaderString: a loader is named by its class (a DataLoader subclass
// with its dataset and settings as a DataLoader is), with the framework's
// object that iterates it; an iterable given to wrap() by its type.
func TestLoaderString(t *testing.T) {
	for _, tc := range []struct {
		l    ownloop.Loader
		want string
	}{
		{ownloop.Loader{Index: 1, Kind: "DataLoader", Dataset: "Sleepy", BatchSize: 4, Workers: 2, Site: "train.py:9"},
			"#1 DataLoader(Sleepy, batch_size=4, num_workers=2) at train.py:9"},
		{ownloop.Loader{Index: 2, Kind: "BucketLoader", Dataset: "Tokens", BatchSize: 16, Site: "train_hf.py:61"},
			"#2 BucketLoader(Tokens, batch_size=16, num_workers=0) at train_hf.py:61"},
		{ownloop.Loader{Index: 1, Kind: "DataLoader", Dataset: "Tokens", BatchSize: 16, Site: "train_hf.py:61", Via: "DataLoaderShard (accelerate)"},
			"#1 DataLoader(Tokens, batch_size=16, num_workers=0) at train_hf.py:61, iterated by DataLoaderShard (accelerate)"},
		{ownloop.Loader{Index: 1, Dataset: "Old", BatchSize: 8, Site: "a.py:1"}, // a record without its kind
			"#1 DataLoader(Old, batch_size=8, num_workers=0) at a.py:1"},
		{ownloop.Loader{Index: 3, Kind: "generator", Site: "loop.py:4"}, "#3 generator at loop.py:4"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

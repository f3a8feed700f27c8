package loader

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestWorkersFlag: one count is a number to the flag package (its bound
// checked by cli.CheckBounds), a list is read and bounded by Counts, and
// either prints its default as given.
func TestWorkersFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		list    bool
		def     []int
		arg     string
		want    []int
		wantErr string
	}{
		{"one, default", false, []int{4}, "", []int{4}, ""},
		{"one", false, []int{4}, "7", []int{7}, ""},
		{"one, not a number", false, []int{4}, "x", nil, "parse error"},
		{"list, default", true, []int{1, 2}, "", []int{1, 2}, ""},
		{"list", true, []int{1, 2}, "3, 5", []int{3, 5}, ""},
		{"list, zero", true, []int{1}, "1,0", nil, "--workers: 0 must be positive"},
		{"list, beyond the bound", true, []int{1}, "1,100000", nil, "--workers 100000: want 1 to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("headspace test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			w := WorkersFlag(fs, tc.list, "`counts`", tc.def...)
			var args []string
			if tc.arg != "" {
				args = []string{"--workers", tc.arg}
			}
			err := fs.Parse(args)
			var got []int
			if err == nil {
				got, err = w.Counts()
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want one with %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "" && !slices.Equal(got, tc.want):
				t.Errorf("counts %v, want %v", got, tc.want)
			}
			if _, isInt := w.Get().(int); isInt == tc.list {
				t.Errorf("Get is a %T; want an int for one count only", w.Get())
			}
		})
	}
}

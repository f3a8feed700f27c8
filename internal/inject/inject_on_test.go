//go:build headspace_inject

package inject

import "testing"

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		spec, level string
		want        float64
	}{
		{"raw=0.10", "raw", 0.10},
		{"raw=0.10", "none", 0},
		{"raw", "raw", 0},
		{"raw=x", "raw", 0},
		{"raw=-1", "raw", 0},
		{"", "raw", 0},
	} {
		if got := share(tc.spec, tc.level); got != tc.want {
			t.Errorf("share(%q, %q) = %v, want %v", tc.spec, tc.level, got, tc.want)
		}
	}
}

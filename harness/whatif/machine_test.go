package whatif

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"cpu  118462 0 59180 1896591 1088 0 1334 0 0 0\ncpu0 1 2 3 4\n", (118462 + 59180 + 1334) * clockTick, true},
		{"cpu 1 2 3 4 5 6 7 8 9 10", (1 + 2 + 3 + 6 + 7 + 8) * clockTick, true},
		{"cpu 1 2 3 4", 6 * clockTick, true},
		{"cpu0 1 2 3 4 5", 0, false},
		{"cpu 1 2 x 4 5", 0, false},
		{"cpu 1 -2 3 4 5", 0, false},
		{"", 0, false},
		{"cpu 9223372036854775807 0 0 0 0", 0, false},
	} {
		got, err := ParseProcStat([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseProcStat(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("cpu  118462 0 59180 1896591 1088 0 1334 0 0 0\n"))
	f.Add([]byte("cpu 1 2 3 4"))
	f.Add([]byte("intr 1 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseProcStat(data)
		if err == nil && d < 0 {
			t.Fatalf("negative busy time %v from %q", d, data)
		}
	})
}

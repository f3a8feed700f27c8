package cli

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary text to the list, size, shard and boolean
// parsers behind the flags: none may panic, every failure is a usage error
// on one line, and what they accept holds what they promise.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1,2,4", "1024", "256x256", "0/2", "1/2", "true,false", "", ",", "x", "-1", "9223372036854775808", "3x", "1/0", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		oneLine := func(err error) {
			var ue UsageError
			if !errors.As(err, &ue) || strings.ContainsAny(ue.Msg, "\n\r") {
				t.Fatalf("%q: %v is not a one-line usage error", s, err)
			}
		}
		if ns, err := ParseInts("--workers", s); err != nil {
			oneLine(err)
		} else {
			for _, n := range ns {
				if n <= 0 {
					t.Fatalf("parseInts(%q) accepted %d", s, n)
				}
			}
		}
		if w, h, err := ParseSize("--raw-size", s); err != nil {
			oneLine(err)
		} else if w <= 0 || h <= 0 {
			t.Fatalf("parseSize(%q) = %d, %d", s, w, h)
		}
		if i, n, err := ParseShard(s); err != nil {
			oneLine(err)
		} else if i < 0 || i >= n {
			t.Fatalf("parseShard(%q) = %d/%d", s, i, n)
		}
		if bs, err := ParseBools("--pinned", s); err != nil {
			oneLine(err)
		} else if len(bs) == 0 {
			t.Fatalf("ParseBools(%q) gave nothing", s)
		}
	})
}

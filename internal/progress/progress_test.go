package progress

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// newWriter returns a bar that always draws on w.
func newWriter(w io.Writer, total int) *Bar {
	return &Bar{w: w, total: total, start: time.Now(), active: true}
}

func TestBarDraws(t *testing.T) {
	var sb strings.Builder
	b := newWriter(&sb, 4)
	b.Set("level=none")
	b.Add(2)
	b.Finish()
	out := sb.String()
	for _, want := range []string{"[===============               ] 2/4", "level=none", "\r\033[K"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}

func TestSilentOffTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "bar")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := New(f, 3)
	b.Add(1)
	b.Finish()
	fi, _ := f.Stat()
	if fi.Size() != 0 {
		t.Errorf("bar wrote %d bytes to a file", fi.Size())
	}
}

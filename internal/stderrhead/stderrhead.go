// Package stderrhead keeps the start of a child process's stderr, for
// the one-line error that says why the child failed: its first line says
// what went wrong ("headspace worker: …", "panic: …", "fatal error: …");
// what follows, such as a panic's stack trace, is dropped, so the
// parent's error stays one line. The process loaders' workers and the
// node's ranks both use it.
package stderrhead

import (
	"strings"
	"sync"
)

// Max is how many bytes of the stream a Writer keeps.
const Max = 1024

// Writer keeps the first Max bytes written to it. It is safe for
// concurrent use: the child writes while the parent reads.
type Writer struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps what fits in Max and reports all of p written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := Max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String is the first non-empty line kept, its spaces collapsed; "" if
// there is none.
func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for line := range strings.Lines(string(w.buf)) {
		if f := strings.Fields(line); len(f) > 0 {
			return strings.Join(f, " ")
		}
	}
	return ""
}

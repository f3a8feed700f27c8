package procloader

import (
	"strings"
	"sync"
)

// StderrMax is how many bytes of a child's stderr a StderrHead keeps.
const StderrMax = 1024

// StderrHead keeps the start of a child process's stderr, the first
// StderrMax bytes, for the one-line error that says why the child failed:
// its first line says what went wrong ("headspace worker: …", "panic: …",
// "fatal error: …"); what follows, such as a panic's stack trace, is
// dropped, so the parent's error stays one line. The workers here and the
// node's ranks (package node) use it. It is safe for concurrent use: the
// child writes while the parent reads.
type StderrHead struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps what fits in StderrMax and reports all of p written.
func (w *StderrHead) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := StderrMax - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String is the first non-empty line kept, its spaces collapsed; "" if
// there is none.
func (w *StderrHead) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for line := range strings.Lines(string(w.buf)) {
		if f := strings.Fields(line); len(f) > 0 {
			return strings.Join(f, " ")
		}
	}
	return ""
}

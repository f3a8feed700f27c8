// Package progress draws a one-line progress bar on a terminal. It draws
// nothing when its output is not a terminal (a pipe, a file, CI), so logs and
// result files stay clean.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar is a progress bar over a known number of units of work.
type Bar struct {
	mu     sync.Mutex
	w      io.Writer
	total  int
	done   int
	label  string
	start  time.Time
	active bool
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// New returns a bar of total units drawn on f if f is a terminal, and a
// silent one otherwise.
func New(f *os.File, total int) *Bar {
	return &Bar{w: f, total: total, start: time.Now(), active: IsTerminal(f)}
}

// Set says what is running now and redraws.
func (b *Bar) Set(label string) {
	b.mu.Lock()
	b.label = label
	b.draw()
	b.mu.Unlock()
}

// Add marks n more units done and redraws.
func (b *Bar) Add(n int) {
	b.mu.Lock()
	b.done += n
	b.draw()
	b.mu.Unlock()
}

// Finish clears the line.
func (b *Bar) Finish() {
	b.mu.Lock()
	if b.active {
		fmt.Fprint(b.w, "\r\033[K")
	}
	b.mu.Unlock()
}

func (b *Bar) draw() {
	if !b.active {
		return
	}
	const width = 30
	frac := 0.0
	if b.total > 0 {
		frac = float64(b.done) / float64(b.total)
	}
	if frac > 1 {
		frac = 1
	}
	n := int(frac * width)
	eta := ""
	if b.done > 0 && b.done < b.total {
		el := time.Since(b.start)
		left := time.Duration(float64(el) / float64(b.done) * float64(b.total-b.done))
		eta = " eta " + left.Round(time.Second).String()
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %d/%d%s %s", strings.Repeat("=", n), strings.Repeat(" ", width-n), b.done, b.total, eta, b.label)
}

// For returns a bar of total units drawn on w when w is a terminal (an
// *os.File that is one), and a silent one otherwise: what a command wants
// for the stderr it is handed.
func For(w io.Writer, total int) *Bar {
	if f, ok := w.(*os.File); ok {
		return New(f, total)
	}
	return &Bar{w: w, total: total, start: time.Now()}
}

// Package report is what every report is made of: Markdown tables
// (Table), the formatting of the numbers in them and in the text around
// them (Plural, Ms), and the saving of plots to files (Save, SaveBoth,
// SaveCanvas: the format the path's extension names, written atomically
// as a figure, so a killed run leaves no half-written image and never
// replaces a file headspace did not write as one).
//
// It draws nothing and decides no wording of its own: the experiments'
// packages (whatif, node, peer, remedies, analysis, …), the history page
// and the documents' reports say what their reports hold, through it.
package report

import (
	"fmt"
	"time"
)

// Plural is n and word, with an s for any n but 1: "1 run", "5 runs".
func Plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Ms is d in milliseconds, with decimals decimals: "290.0 ms".
func Ms(d time.Duration, decimals int) string {
	return fmt.Sprintf("%.*f ms", decimals, float64(d)/1e6)
}

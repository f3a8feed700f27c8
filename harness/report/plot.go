package report

import (
	"fmt"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// Save draws p, w by h, to path in the format its extension names (.png
// or .svg), atomically, as a figure (atomicfile.Figure). An error names
// the plot and its path ("plot PATH: …"): a caller puts what the plot
// is in front.
func Save(p *plot.Plot, path string, w, h vg.Length) error {
	ext := filepath.Ext(path)
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot %s: want a .png or .svg path", path)
	}
	wt, err := p.WriterTo(w, h, ext[1:])
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return SaveCanvas(path, wt)
}

// SaveBoth draws p, w by h, to base.png and base.svg (Save).
func SaveBoth(p *plot.Plot, base string, w, h vg.Length) error {
	for _, ext := range []string{".png", ".svg"} {
		if err := Save(p, base+ext, w, h); err != nil {
			return err
		}
	}
	return nil
}

// SaveCanvas writes a figure drawn some other way (plots tiled on one
// canvas, a canvas of a set size and resolution) to path, atomically, as
// a figure: c writes the whole file (vgimg.PngCanvas, a vgsvg canvas).
func SaveCanvas(path string, c io.WriterTo) error {
	return atomicfile.WriteKindTo(path, atomicfile.Figure, c)
}

package driver

import (
	"context"
	"os"

	"github.com/headspace-bench/headspace/harness/driver/internal/resultwrite"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// partial is a fresh run streamed into a file marked partial until it
// completes (openPartial, complete).
type partial struct {
	file     *file // the streamed file
	out      Output
	settings []resultfile.Config
	inPlace  bool
}

// openPartial opens out's file for a fresh run measured under settings,
// streamed (file.Add) with the mark "partial: true" until complete: into
// out.Path itself, unless it holds a complete run, which is kept whole
// until this one is complete too; the run then streams beside it
// (resultfile.Beside(path, "partial")), as the ladder keeps a finished
// file. A pipe or a device (/dev/stdout) is written once, in place,
// without the mark. Without a path the run records nothing.
func openPartial(ctx context.Context, out Output, settings []resultfile.Config) (*partial, error) {
	p := &partial{out: out, settings: settings, inPlace: out.Path != "" && atomicfile.InPlace(out.Path)}
	stream := out
	stream.Fresh = true
	streamed := append(settings[:len(settings):len(settings)], resultfile.Config{Key: "partial", Value: "true"})
	if p.inPlace {
		streamed = settings
	} else if out.Path != "" {
		if prev, err := resultwrite.Summarize(out.Path); err == nil && prev.Results > 0 && !prev.Partial {
			stream.Path = resultfile.Beside(out.Path, "partial")
			if err := Check(stream); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if p.file, err = open(ctx, stream, streamed); err != nil {
		return nil, err
	}
	return p, nil
}

// complete closes the run and gives out.Path the whole run under the
// settings, without the partial mark; the partial file beside a kept one
// goes. A run in place is only closed.
func (p *partial) complete() error {
	stream := p.file.Path()
	if err := p.file.Close(); err != nil || p.inPlace || p.out.Path == "" {
		return err
	}
	done, err := resultfile.Read(stream)
	if err != nil {
		return err
	}
	if _, err := write(Output{Path: p.out.Path, Force: true}, p.settings, done, false, nil); err != nil {
		return err
	}
	if stream != p.out.Path {
		os.Remove(stream)
	}
	return nil
}

package driver

import (
	"context"
	"os"

	"github.com/headspace-bench/headspace/harness/driver/internal/resultwrite"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// Partial is a fresh run streamed into a file marked partial until it
// completes (OpenPartial, Partial.Complete).
type Partial struct {
	Run      *File // the streamed file
	out      Output
	settings []resultfile.Config
	inPlace  bool
}

// OpenPartial opens out's file for a fresh run measured under settings,
// streamed (File.Add) with the mark "partial: true" until Complete: into
// out.Path itself, unless it holds a complete run, which is kept whole
// until this one is complete too; the run then streams beside it
// (resultfile.Beside(path, "partial")), as the ladder keeps a finished
// file. A pipe or a device (/dev/stdout) is written once, in place,
// without the mark. Without a path the run records nothing.
func OpenPartial(ctx context.Context, out Output, settings []resultfile.Config) (*Partial, error) {
	p := &Partial{out: out, settings: settings, inPlace: out.Path != "" && atomicfile.InPlace(out.Path)}
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
	if p.Run, err = Open(ctx, stream, streamed); err != nil {
		return nil, err
	}
	return p, nil
}

// Path is the streamed file's path: out.Path, or the file beside it.
func (p *Partial) Path() string { return p.Run.Path() }

// Close releases the streamed file's write lock.
func (p *Partial) Close() error { return p.Run.Close() }

// InPlace reports whether the run is written in place (a pipe or a
// device): it carries no partial mark, and Complete only closes it.
func (p *Partial) InPlace() bool { return p.inPlace }

// Complete closes the run and gives out.Path the whole run under the
// settings, without the partial mark; the partial file beside a kept one
// goes.
func (p *Partial) Complete() error {
	stream := p.Path()
	if err := p.Close(); err != nil || p.inPlace || p.out.Path == "" {
		return err
	}
	done, err := resultfile.Read(stream)
	if err != nil {
		return err
	}
	if _, err := Write(Output{Path: p.out.Path, Force: true}, p.settings, done, false); err != nil {
		return err
	}
	if stream != p.out.Path {
		os.Remove(stream)
	}
	return nil
}

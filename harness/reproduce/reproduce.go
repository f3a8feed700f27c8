package reproduce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/atomicfile"
	"github.com/headspace-bench/headspace/harness/device"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/progress"

	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/workloads"
)

// Options configures a reproduction.
type Options struct {
	// Quick runs every code path at tiny sizes, in seconds; its numbers
	// are not comparable with the documents'.
	Quick bool
	// Out is the directory the reports go to (<Out>/<id>-<name>.md); their
	// figures go to <Out>/figures/<id>-*.png|svg|gif. Created if missing.
	Out string
	// Workers is the loader workers per stage; 0 means GOMAXPROCS (one per
	// core, as the document 003's 4 workers on 4 vCPUs).
	Workers int
	// Step is the emulated device's step time; 0 means
	// workloads.DocumentStep, or workloads.QuickStep with Quick. Ignored
	// when Device is set.
	Step time.Duration
	// Device, if set, opens the device the training loops run on (one per
	// document); nil means the emulated device with Step and its default
	// (assumed) bandwidths.
	Device func() (device.Device, error)
	// Worker says how to start a process-mode loader worker (document 002);
	// Exe is normally os.Executable() of headspace.
	Worker procloader.Options
	// Command is the command line printed in every report.
	Command string
	// Progress, if set, receives progress: a bar when it is a terminal,
	// one line per finished unit of work otherwise.
	Progress io.Writer
}

// settings are Options with the defaults filled in.
type settings struct {
	Options
	machine  machine.Machine
	devDesc  string // the device, in words, for the reports
	emulated bool   // the device is the emulated one, with Step
	current  Doc    // the document running
}

func (o Options) settings() (settings, error) {
	if o.Out == "" {
		return settings{}, errors.New("reproduce: no output directory")
	}
	if o.Workers < 0 {
		return settings{}, fmt.Errorf("reproduce: workers %d must not be negative", o.Workers)
	}
	if o.Step < 0 {
		return settings{}, fmt.Errorf("reproduce: step %v must not be negative", o.Step)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Step == 0 {
		o.Step = workloads.DocumentStep
		if o.Quick {
			o.Step = workloads.QuickStep
		}
	}
	if o.Command == "" {
		o.Command = "headspace reproduce"
	}
	s := settings{Options: o}
	if o.Device == nil {
		cfg := device.DefaultEmulated()
		cfg.Step = o.Step
		s.Device = func() (device.Device, error) { return device.NewEmulated(cfg) }
		s.emulated = true
		s.devDesc = fmt.Sprintf("emulated: %v step (timer waits), host-to-device copies at %.0f GB/s pinned (assumed PCIe 4.0 x16, not measured)",
			cfg.Step, cfg.PinnedBandwidth/1e9)
	}
	return s, nil
}

// openDevice opens the device and, for a device given in Options, takes its
// description from its name.
func (s *settings) openDevice() (device.Device, error) {
	dev, err := s.Device()
	if err != nil {
		return nil, fmt.Errorf("opening the device: %w", err)
	}
	if s.devDesc == "" {
		s.devDesc = dev.Name()
	}
	return dev, nil
}

// Doc is one document the package reproduces.
type Doc struct {
	ID     string // "003"
	Name   string // the report's file name after the ID: "caching-ladder"
	Title  string // the document's title
	Source string // the document's seed files, in words
	// run measures the document's experiment and renders its report.
	run func(ctx context.Context, s *settings, t *tracker) (report []byte, err error)
}

// Report is the report's file name: "003-caching-ladder.md".
func (d Doc) Report() string { return d.ID + "-" + d.Name + ".md" }

// Docs lists the documents in the order Run runs them. 001 is the
// reStructuredText source of 000; its report is 000's.
var Docs = []Doc{
	{ID: "000", Name: "headspace", Title: "SPDL: Headspace Analysis", Source: "000 and its source 001 (`000_b26ccd1800a65d07.txt`, `001_bfd1d3776b60ebdb.txt`)", run: run000},
	{ID: "002", Name: "loaders", Title: "Thread-Based Data Loading: SPDL Can Speed Up Model Training", Source: "002 (`002_ddd8ca0605a62902.txt`), with the loader-only figures of SPDL's documentation", run: run002},
	{ID: "003", Name: "caching-ladder", Title: "A Caching Strategy for Identifying Bottlenecks on the Data Input Pipeline", Source: "003 (`003_6d72fe6df9c9377c.txt`)", run: run003},
	{ID: "004", Name: "sim", Title: "Visualizing data loaders to diagnose deep learning pipelines", Source: "004 (`004_86163727c16e432a.txt`)", run: run004},
}

// IDs lists the documents' IDs.
func IDs() []string {
	ids := make([]string, len(Docs))
	for i, d := range Docs {
		ids[i] = d.ID
	}
	return ids
}

// Lookup returns the document with id; "001" is 000's report.
func Lookup(id string) (Doc, error) {
	if id == "001" {
		id = "000"
	}
	for _, d := range Docs {
		if d.ID == id {
			return d, nil
		}
	}
	return Doc{}, fmt.Errorf("unknown document %q (want %s)", id, strings.Join(IDs(), ", "))
}

// Run reproduces the documents ids (every document when ids is empty; "001"
// is 000, and each runs once), in the order given, writing each report as
// soon as its experiment is done. It stops at the first failure with an
// error that names the document; the reports already written stay. It
// returns the paths of the reports written.
func Run(ctx context.Context, ids []string, opt Options) ([]string, error) {
	if len(ids) == 0 {
		ids = IDs()
	}
	var docs []Doc
	for _, id := range ids {
		d, err := Lookup(id)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(docs, func(o Doc) bool { return o.ID == d.ID }) {
			docs = append(docs, d) // "000,001" is one report
		}
	}
	return run(ctx, docs, opt)
}

// run is Run over resolved documents.
func run(ctx context.Context, docs []Doc, opt Options) ([]string, error) {
	s, err := opt.settings()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(s.Out, "figures"), 0o755); err != nil {
		return nil, err
	}
	s.machine = machine.Describe()
	var written []string
	for _, d := range docs {
		if err := ctx.Err(); err != nil {
			return written, fmt.Errorf("document %s (%s): %w", d.ID, d.Title, err)
		}
		t := newTracker(s.Progress, d.ID)
		s.current = d
		report, err := d.run(ctx, &s, t)
		t.finish()
		if err != nil {
			return written, fmt.Errorf("document %s (%s): %w", d.ID, d.Title, err)
		}
		path := filepath.Join(s.Out, d.Report())
		if err := atomicfile.WriteBytes(path, report); err != nil {
			return written, fmt.Errorf("document %s (%s): %w", d.ID, d.Title, err)
		}
		written = append(written, path)
		t.logf("report: %s", path)
	}
	return written, nil
}

// header is the report header of the running document.
func (s *settings) header(elapsed time.Duration) Header {
	d := s.current
	return Header{ID: d.ID, Title: d.Title, Source: d.Source, Command: s.Command, Quick: s.Quick,
		Machine: s.machine, Device: s.devDesc, Elapsed: elapsed}
}

// figure is the path of a figure of document id in s.Out, and its link
// relative to the reports.
func (s *settings) figure(id, name string) (path, link string) {
	link = "figures/" + id + "-" + name
	return filepath.Join(s.Out, filepath.FromSlash(link)), link
}

// markdown renders a report into a buffer.
func markdown(r interface{ WriteMarkdown(io.Writer) error }) ([]byte, error) {
	var b bytes.Buffer
	err := r.WriteMarkdown(&b)
	return b.Bytes(), err
}

// tracker reports a document's progress: a bar on a terminal, lines
// elsewhere, nothing without a writer.
type tracker struct {
	doc   string
	w     io.Writer
	bar   *progress.Bar // on a terminal
	lines bool          // not a terminal: one line per unit
	start time.Time
}

func newTracker(w io.Writer, doc string) *tracker {
	t := &tracker{doc: doc, w: w, start: time.Now()}
	if w == nil {
		return t
	}
	if f, ok := w.(*os.File); ok && progress.IsTerminal(f) {
		t.bar = progress.New(f, 0)
	} else {
		t.lines = true
	}
	return t
}

// begin says how many units of work the document has.
func (t *tracker) begin(total int) {
	if t.bar != nil {
		t.bar = progress.New(t.w.(*os.File), total)
	}
}

// unit says what runs now.
func (t *tracker) unit(label string) {
	if t.bar != nil {
		t.bar.Set(t.doc + " " + label)
	}
}

// done marks one unit finished, with what it measured.
func (t *tracker) done(format string, args ...any) {
	if t.bar != nil {
		t.bar.Add(1)
	}
	if t.lines {
		fmt.Fprintf(t.w, "reproduce %s: %s\n", t.doc, fmt.Sprintf(format, args...))
	}
}

// logf prints a line (after clearing the bar).
func (t *tracker) logf(format string, args ...any) {
	if t.w == nil {
		return
	}
	if t.bar != nil {
		t.bar.Finish()
	}
	fmt.Fprintf(t.w, "reproduce %s: %s\n", t.doc, fmt.Sprintf(format, args...))
}

// finish clears the bar.
func (t *tracker) finish() {
	if t.bar != nil {
		t.bar.Finish()
	}
}

// elapsed is the time since the document started.
func (t *tracker) elapsed() time.Duration { return time.Since(t.start) }

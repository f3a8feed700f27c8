package reproduce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/workloads"
)

// Options configures a reproduction.
type Options struct {
	// Quick runs every code path at tiny sizes, in seconds; its numbers
	// are not comparable with the documents'.
	Quick bool
	// Out is the directory the reports go to (<Out>/<id>-<name>.md); their
	// figures go to <Out>/figures/<id>-*.png|svg|gif and their saved
	// measurements to <Out>/results/<id>-<name>.txt. Created if missing.
	Out string
	// From, if set, is a directory of saved result files (a run's
	// <Out>/results): the reports are rebuilt from them without measuring,
	// and Quick, Workers, Step, Device, Worker and Command are ignored. A
	// file that is missing, unreadable or another document's fails the
	// rebuild with a *FileError.
	From string
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
	// TorchPeer is the document's own training script that 003 runs
	// beside ours on the emulated device (peers/torch/ladder.py); the
	// zero value means DefaultTorchPeer. Where it cannot run, the report
	// says so and why.
	TorchPeer peer.Peer
	// Command is the command line printed in every report.
	Command string
	// Progress, if set, receives progress: a bar when it is a terminal,
	// one line per finished unit of work otherwise.
	Progress io.Writer
	// Force lets a quick run replace a full run's saved results, and a
	// smaller run replace a larger one (driver.Run).
	Force bool
}

// settings are Options with the defaults filled in.
type settings struct {
	Options
	machine  machine.Machine
	devDesc  string // the device, in words, for the reports
	emulated bool   // the device is the emulated one, with Step
	// emulatedConfig is the emulated device's configuration, when emulated.
	emulatedConfig device.EmulatedConfig
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
		cfg := workloads.DocumentDevice()
		cfg.Step = o.Step
		s.emulated, s.emulatedConfig = true, cfg
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

// size is the experiments' size: workloads.Quick with Options.Quick.
func (s *settings) size() workloads.Size {
	if s.Quick {
		return workloads.Quick
	}
	return workloads.Default
}

// env is the environment the experiments run in: the device of the
// options (the emulated one can scale its step, for the what-if model)
// and the process workers. Each unit of work the experiment starts is a
// unit of t's progress (tracker.unit).
func (s *settings) env(t *tracker) workloads.Env {
	dev := workloads.Device{Open: func(bool) (device.Device, error) { return s.openDevice() }}
	if s.emulated {
		dev = workloads.Emulated(s.emulatedConfig)
	}
	return workloads.Env{Device: dev, Worker: s.Worker, Start: t.unit}
}

// measure runs experiment e through the workloads.Experiment interface:
// its records, and its settings followed by extra for the result file.
func (s *settings) measure(ctx context.Context, e workloads.Experiment, t *tracker, extra ...resultfile.Config) (measurement, error) {
	recs, err := e.Run(ctx, s.env(t))
	if err != nil {
		return measurement{}, err
	}
	t.end("%s", t.running)
	return measurement{config: append(e.Settings(), extra...), recs: recs}, nil
}

// Doc is the report of one document the package reproduces: its file,
// doc<ID>.go, declares it with report, naming the registered experiment
// (workloads.Registry) that the report is of, how the report measures it
// and how the report renders from the saved result file alone.
type Doc struct {
	ID     string // "003"
	Name   string // the report's file name after the ID: "caching-ladder"
	Title  string // the document's title
	Source string // the document's seed files, in words
	// Summary is what is reproduced, in a sentence: its line in the
	// list of `headspace reproduce --help`.
	Summary string
	// Experiment is the registered experiment the report is of (any
	// value of its type): the document's ID is its Document(), and the
	// reports run in the Registry's order.
	Experiment workloads.Experiment
	// Saved lists the files a run saves beside its result file, by name
	// (003's timeline); a rebuild needs them too.
	Saved []string
	// measure runs the document's experiment: its records and the
	// settings they were measured with, for the result file.
	measure func(ctx context.Context, s *settings, t *tracker) (measurement, error)
	// render builds the report from the result file read back, drawing its
	// figures.
	render func(f *resultFile, p *page) (report []byte, err error)
}

// measurement is what a document's experiment saves: the settings it ran
// with, as configuration lines after the header's, and its records.
type measurement struct {
	config []resultfile.Config
	recs   []*benchfmt.Result
}

// Report is the report's file name: "003-caching-ladder.md".
func (d Doc) Report() string { return d.ID + "-" + d.Name + ".md" }

// Results is the result file's name: "003-caching-ladder.txt".
func (d Doc) Results() string { return d.ID + "-" + d.Name + ".txt" }

// Docs lists the documents' reports in the order Run runs them: the
// order of their experiments in workloads.Registry. Each document's file
// adds its own (report); no other list names them. 001 is the
// reStructuredText source of 000; its report is 000's.
var Docs []Doc

// report adds d to Docs, in the Registry's order of its experiment. It
// panics, when the package is initialised, on a report whose experiment
// is not registered or is another document's, or a document reported
// twice: mistakes any test of the package shows.
func report(d Doc) {
	at := registered(d.Experiment)
	switch {
	case at < 0:
		panic(fmt.Sprintf("reproduce: report %s is of %T, which is not in workloads.Registry", d.ID, d.Experiment))
	case d.Experiment.Document() != d.ID:
		panic(fmt.Sprintf("reproduce: report %s is of %s, an experiment of document %q", d.ID, d.Experiment.Name(), d.Experiment.Document()))
	case d.measure == nil || d.render == nil:
		panic(fmt.Sprintf("reproduce: report %s cannot measure or render", d.ID))
	case d.Name == "" || d.Title == "" || d.Summary == "":
		panic(fmt.Sprintf("reproduce: report %s has no name, title or summary", d.ID))
	}
	i := 0
	for ; i < len(Docs); i++ {
		if Docs[i].ID == d.ID {
			panic(fmt.Sprintf("reproduce: document %s reported twice", d.ID))
		}
		if registered(Docs[i].Experiment) > at {
			break
		}
	}
	Docs = slices.Insert(Docs, i, d)
}

// registered is e's index in workloads.Registry; -1 if it is not there.
func registered(e workloads.Experiment) int {
	if e == nil {
		return -1
	}
	return slices.IndexFunc(workloads.Registry, func(r workloads.Registered) bool {
		x := r.Experiment()
		return x.Name() == e.Name() && reflect.TypeOf(x) == reflect.TypeOf(e)
	})
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

// reportKind is what a report is, for the output policy.
var reportKind = atomicfile.Report("reproduce report")

// check makes the output directories and checks every output a run of
// docs replaces before anything is measured: an unusable --out, a report
// or saved file headspace did not write, or full saved results that a
// quick run would replace without Force are refused (atomicfile.ErrRefused).
func check(docs []Doc, s settings) error {
	saved := filepath.Join(s.Out, "results")
	for _, dir := range []string{s.Out, filepath.Join(s.Out, "figures"), saved} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return atomicfile.Refusef("cannot use %s as the output directory: %v", s.Out, pathErr(err))
		}
		if err := atomicfile.Check(filepath.Join(dir, "probe")); err != nil {
			return atomicfile.Refusef("cannot use %s as the output directory: %v", s.Out, err)
		}
	}
	for _, d := range docs {
		if err := atomicfile.CheckKind(filepath.Join(s.Out, d.Report()), reportKind); err != nil {
			return err
		}
		if s.From != "" {
			continue
		}
		if err := driver.CheckReplace(filepath.Join(saved, d.Results()), s.Quick, s.Force); err != nil {
			return err
		}
	}
	return nil
}

// pathErr is err without an *fs.PathError's operation and path.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// run is Run over resolved documents.
func run(ctx context.Context, docs []Doc, opt Options) ([]string, error) {
	s, err := opt.settings()
	if err != nil {
		return nil, err
	}
	saved := filepath.Join(s.Out, "results")
	if err := check(docs, s); err != nil {
		return nil, err
	}
	if s.From == "" {
		s.machine = machine.Describe()
	}
	var written []string
	for _, d := range docs {
		path, err := s.reproduce(ctx, d, saved)
		if err != nil {
			return written, fmt.Errorf("document %s (%s): %w", d.ID, d.Title, err)
		}
		written = append(written, path)
	}
	return written, nil
}

// reproduce measures document d and saves its result file into saved, or
// with From takes the saved one, then writes the report from it; it
// returns the report's path.
func (s *settings) reproduce(ctx context.Context, d Doc, saved string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t := &tracker{doc: d.ID, w: s.Progress, start: time.Now()}
	from := saved
	if s.From != "" {
		from = s.From
	} else {
		// The document's experiment runs through the driver, which draws
		// its progress and writes its result file whole when it ends.
		var m measurement
		path := filepath.Join(saved, d.Results())
		o, err := driver.Run(ctx, driver.Job{Progress: s.Progress, Lines: "reproduce " + d.ID,
			Settings: func() []resultfile.Config {
				dev := s.devDesc
				if dev == "" {
					dev = "none"
				}
				return append(headerConfig(d, s.machine, dev, s.Command, s.Quick, t.elapsed()), m.config...)
			},
			Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
				t.h = h
				defer func() { t.h = nil }()
				var err error
				m, err = d.measure(ctx, s, t)
				return m.recs, err
			}}, driver.Output{Path: path, Force: s.Force, Beside: true})
		if err != nil {
			return "", err
		}
		if o.Path != path {
			return "", fmt.Errorf("kept %s, a larger run's results; this run's are in %s (--force replaces the larger run)", path, o.Path)
		}
	}
	// The report is built from the file read back, measured or not, so a
	// run and a rebuild cannot differ.
	f, err := readResultFile(filepath.Join(from, d.Results()), d)
	if err != nil {
		return "", err
	}
	report, err := d.render(f, &page{out: s.Out, saved: from})
	if err != nil {
		return "", err
	}
	// A rebuild into another directory takes the saved files along, so
	// that the reports' links to them hold.
	for _, name := range append([]string{d.Results()}, d.Saved...) {
		if err := copyFile(filepath.Join(from, name), filepath.Join(saved, name)); err != nil {
			return "", err
		}
	}
	path := filepath.Join(s.Out, d.Report())
	if err := atomicfile.WriteKindBytes(path, reportKind, report); err != nil {
		return "", err
	}
	t.logf("report: %s", path)
	return path, nil
}

// page is where a report's figures go and its saved files come from.
type page struct {
	out   string // the reports' directory
	saved string // the directory of the result files read
}

// figure is the path of a figure of document id in the reports'
// directory, and its link relative to the reports.
func (p *page) figure(id, name string) (path, link string) {
	link = "figures/" + id + "-" + name
	return filepath.Join(p.out, filepath.FromSlash(link)), link
}

// readSaved reads a file saved beside the result files: its path and
// content; a missing or unreadable one is a *FileError.
func (p *page) readSaved(name string) (path string, b []byte, err error) {
	path = filepath.Join(p.saved, name)
	if _, err := os.Stat(path); err != nil {
		return path, nil, &FileError{Path: path, Err: errors.New("no such file")}
	}
	if b, err = atomicfile.ReadFileLimit(path, maxSaved); err != nil {
		return path, nil, &FileError{Path: path, Err: err}
	}
	return path, b, nil
}

// resultsLink is the link to document d's result file, relative to the
// reports.
func resultsLink(d Doc) string { return "results/" + d.Results() }

// savedKind is what a saved JSON file beside the results is: written
// atomically under internal/atomicfile's output policy, it gains a
// leading "format" member.
var savedKind = atomicfile.JSON("reproduce saved file", "headspace-reproduce-saved/1")

// maxSaved bounds the read of a saved JSON file (a regular file).
const maxSaved = 256 << 20

// markdown renders a report into a buffer.
func markdown(r interface{ WriteMarkdown(io.Writer) error }) ([]byte, error) {
	var b bytes.Buffer
	err := r.WriteMarkdown(&b)
	return b.Bytes(), err
}

// tracker is a document's progress as its measure reports it, on the
// hooks of the driver's run (driver.Run draws the line, on a terminal, or
// prints a line per finished unit elsewhere; nothing without a writer).
type tracker struct {
	doc   string
	w     io.Writer     // Options.Progress, for lines outside the run
	h     *driver.Hooks // the run's, while the document measures
	start time.Time
	// running is the unit of work that runs now; "" when none does.
	running string
}

// begin says how many units of work the document has.
func (t *tracker) begin(total int) {
	if t.h != nil {
		t.h.Total(total)
	}
}

// unit ends the unit that runs, if any, with its name, and says what
// runs now.
func (t *tracker) unit(label string) {
	t.end("%s", t.running)
	t.running = label
	if t.h != nil {
		t.h.Start(t.doc + " " + label)
	}
}

// end marks the unit that runs finished, with what it measured; nothing
// when none runs.
func (t *tracker) end(format string, args ...any) {
	if t.running != "" && t.h != nil {
		t.h.Finished(fmt.Sprintf(format, args...))
	}
	t.running = ""
}

// logf prints a line (after clearing the progress line).
func (t *tracker) logf(format string, args ...any) {
	switch {
	case t.h != nil:
		t.h.Logf(format, args...)
	case t.w != nil:
		fmt.Fprintf(t.w, "reproduce %s: %s\n", t.doc, fmt.Sprintf(format, args...))
	}
}

// elapsed is the time since the document started.
func (t *tracker) elapsed() time.Duration { return time.Since(t.start) }

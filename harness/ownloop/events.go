package ownloop

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Source is the hook module, headspace_hook.py, as the binary carries it.
//
//go:embed headspace_hook.py
var Source []byte

// HookModule is the hook's module name: `python -m headspace_hook`.
const HookModule = "headspace_hook"

// Settings are what the hook does in one run of the command.
type Settings struct {
	// Mode is "analyze" (the cache iterator, SPDL's semantics) or
	// "ladder" (one level of the caching ladder).
	Mode string `json:"mode"`
	// Loader is which DataLoader is the training loop's, by the order of
	// their first iteration in the main process: 1 is the first.
	Loader int `json:"loader"`
	// The cache iterator's settings (Mode analyze).
	NumCaches         int `json:"num_caches"`
	ReturnCachesAfter int `json:"return_caches_after"`
	StepsAfter        int `json:"steps_after"`
	// Workers, if positive, replaces the training loader's
	// num_workers (whatif --verify).
	Workers int `json:"workers,omitempty"`
	// Tune, if set, replaces the training loader's settings (headspace
	// tune's candidate; Workers is then unused).
	Tune *LoaderSettings `json:"tune,omitempty"`
	// The ladder's (Mode ladder): the level, steps timed after Warmup.
	Level  string `json:"level,omitempty"`
	Steps  int    `json:"steps,omitempty"`
	Warmup int    `json:"warmup,omitempty"`
	// FirstBatchTimeout bounds the wait for the training loop's first
	// batch, from the command's start.
	FirstBatchTimeout time.Duration `json:"-"`
	// StallTimeout bounds the wait for each step after the first batch
	// (0: none).
	StallTimeout time.Duration `json:"-"`
}

// Total is the steps a run needs: both phases, or warm-up and steps.
func (s Settings) Total() int {
	if s.Mode == "ladder" {
		return s.Warmup + s.Steps
	}
	return s.ReturnCachesAfter + s.StepsAfter
}

// Start is what the hook says first: the interpreter and torch.
type Start struct {
	Python      string `json:"python"`
	Executable  string `json:"executable"`
	Torch       string `json:"torch"`
	Torchvision string `json:"torchvision"`
	CUDA        bool   `json:"cuda"`
}

// Loader is a DataLoader the script iterated in its main process (or an
// iterable it gave to headspace_hook.wrap), in the order of first
// iteration.
type Loader struct {
	Index int    `json:"index"`
	Site  string `json:"site"` // file:line where it was made
	Kind  string `json:"kind"` // DataLoader or its subclass, or the wrapped iterable's type
	// Via is the framework's object that iterates the loader for the
	// script and holds it (Accelerate's "DataLoaderShard (accelerate)",
	// timm's "PrefetchLoader (timm)"), "" where the script iterates it.
	Via            string `json:"via,omitempty"`
	Target         bool   `json:"target"`
	Dataset        string `json:"dataset"`
	BatchSize      int    `json:"batch_size"`
	Workers        int    `json:"num_workers"`
	PinMemory      bool   `json:"pin_memory"`
	Len            int    `json:"len"`
	PrefetchFactor int    `json:"prefetch_factor"`
	// Own is the loader's settings before Settings.Tune replaced them:
	// the script's own (but for a worker count Settings.Workers set).
	Own LoaderSettings `json:"own"`
	// Warmup is the steps a ladder run leaves out before timing: one,
	// and the batches the workers prefetched.
	Warmup int `json:"warmup"`
	// Forked says its workers are forked (or it has none): only then
	// can the hook time its stages and apply levels sample and raw.
	Forked bool `json:"forked"`
	// Wrapped says it is an iterable the script gave to
	// headspace_hook.wrap(), not a DataLoader: there is no dataset to
	// time, nor to cache in at levels sample and raw.
	Wrapped bool `json:"wrapped"`
	// Text, where set, is what String says: a loader read back from a
	// result file's line.
	Text     string `json:"-"`
	Measured struct {
		GetItem  bool `json:"getitem"`
		Split    bool `json:"split"`
		Collate  bool `json:"collate"`
		Iterable bool `json:"iterable"` // an IterableDataset: its __iter__ timed per sample
		// Raw says level raw applies: the dataset has a .loader, or is
		// map-style with a .transform (its input replayed).
		Raw bool `json:"raw"`
	} `json:"measured"`
	// Group is, for a loader measured beside the training loop's (the
	// other loaders of Lightning's CombinedLoader), the training loop's
	// loader's number: its batches are cached and replayed from the same
	// step, its waits count in the step's, its stages with the training
	// loader's. 0: none.
	Group int `json:"-"`
}

// String names the loader as the report does.
func (l Loader) String() string {
	if l.Text != "" {
		return l.Text
	}
	if l.Dataset == "" { // an iterable given to wrap()
		return fmt.Sprintf("#%d %s at %s", l.Index, l.Kind, l.Site)
	}
	kind := l.Kind // DataLoader or a subclass of it
	if kind == "" {
		kind = "DataLoader"
	}
	s := fmt.Sprintf("#%d %s(%s, batch_size=%d, num_workers=%d) at %s", l.Index, kind, l.Dataset, l.BatchSize, l.Workers, l.Site)
	if l.Via != "" {
		s += ", iterated by " + l.Via
	}
	return s
}

// Step is one step of the training loop: the time from its batch request
// to the next one, and the wait inside its request. Phase is loader (the
// batch came from the loader), cached (from the caches) or epoch (the
// step spans an epoch's start or another loader's pass: left out).
type Step struct {
	Index int           `json:"i"`
	Time  time.Duration `json:"ns"`
	Wait  time.Duration `json:"wait"`
	Phase string        `json:"ph"`
	// OtherWait is the step's wait for the batches of other loaders
	// (zip(train, other)): they feed the step too.
	OtherWait time.Duration `json:"ow"`
}

// Batch is one batch made by the training loader, in a worker (Worker
// -1: the main process): its samples' __getitem__ time, the part of it in
// the dataset's .loader and .transform, its collate time, and the
// worker's CPU time so far.
type Batch struct {
	Loader    int           `json:"l"` // the loader's number (0: not said)
	Worker    int           `json:"w"`
	Samples   int           `json:"n"`
	GetItem   time.Duration `json:"getitem"`
	Load      time.Duration `json:"load"`
	Transform time.Duration `json:"transform"`
	Collate   time.Duration `json:"collate"`
	CPU       time.Duration `json:"cpu"`
	// The CPU time of the worker's thread in each stage: where the
	// workers wait for a core (the machine is shared), their wall times
	// above say more about the scheduler than about the stage.
	GetItemCPU   time.Duration `json:"getitem_cpu"`
	LoadCPU      time.Duration `json:"load_cpu"`
	TransformCPU time.Duration `json:"transform_cpu"`
	CollateCPU   time.Duration `json:"collate_cpu"`
	// RunQueue is the worker's time so far waiting for a core (Linux's
	// schedstat; negative where it cannot be read).
	RunQueue time.Duration `json:"runq"`
}

// Run is what the hook reported over one run of the command.
type Run struct {
	Start   Start
	Loaders []Loader
	Steps   []Step
	Batches []Batch
	Pins    []time.Duration // pin-memory per batch, in the main process
	// MainCPU is the main process's CPU time at the switch and at the
	// last step, by the number of batches then handed to the loop.
	MainCPU map[int]time.Duration
	// Done says the run got every step it needed.
	Done bool
	// Others are the loaders iterated beside the training loop's, by
	// number: what they delivered while it was measured.
	Others map[int]*Other
	// Retarget says the loader first measured fed steps that trained
	// nothing while another's train: the measurement started again on
	// that one (From is the loader first measured; 0: none).
	Retarget struct{ From int }
	// Unsure says every step is in, but none of them ran a backward
	// pass: the hook goes on to see whether another loop trains. If the
	// script ends first, the measured loop stands.
	Unsure bool
	// Thread names a thread other than the main one that iterated a
	// DataLoader before the training loop was found ("" for none).
	Thread, ThreadSite string
	// Wall is the command's time from its start to its end.
	Wall time.Duration
	// Ranks are the runs of the command's ranks, by rank, where a
	// launcher or torch.multiprocessing.spawn started them (ranks.go);
	// nil for one process. World is how many the node starts.
	Ranks []*Run
	World int
	// A rank's run: its rank, its pid, what it raised.
	Rank   int
	PID    int
	Raised string
	// SwitchAt is 1 + the step of the first cached batch, as the hook
	// said it (0: it did not): SwitchStep.
	SwitchAt int
}

// Other is what a loader that is not the training loop's delivered
// while the training loop was measured.
type Other struct {
	Batches  int           // batches it delivered
	Wait     time.Duration // the loop's wait for them
	Steps    int           // steps of the training loop during which it delivered a batch
	StepWait time.Duration // its wait within those steps
	pending  int
	pendWait time.Duration
}

// want is the steps the run needs under s.
func (r *Run) want(s Settings) int {
	if l, ok := r.Target(); ok && s.Mode == "ladder" && s.Warmup <= 0 && l.Warmup > 0 {
		return l.Warmup + s.Steps
	}
	return s.Total()
}

// member says loader l is measured beside the training loop's loader
// target (Loader.Group).
func (r *Run) member(l, target int) bool {
	for _, x := range r.Loaders {
		if x.Index == l {
			return x.Group == target
		}
	}
	return false
}

// Members are the loaders measured beside the training loop's (the
// other loaders of its CombinedLoader), in order.
func (r *Run) Members() []Loader {
	ld, ok := r.Target()
	var out []Loader
	for _, x := range r.Loaders {
		if ok && x.Group == ld.Index && x.Index != ld.Index {
			out = append(out, x)
		}
	}
	return out
}

// Target is the training loop's loader.
func (r *Run) Target() (Loader, bool) {
	for _, l := range r.Loaders {
		if l.Target {
			return l, true
		}
	}
	return Loader{}, false
}

// event is one line from the hook.
type event struct {
	R   *int   `json:"r"` // the rank whose event it is; nil: one process's
	Ev  string `json:"ev"`
	Msg string `json:"msg"`
	NS  int64  `json:"ns"`
	At  int    `json:"at"`
	N   int    `json:"n"` // ranks: how many the script spawns
	I   int    `json:"i"` // switch: the step of the first cached batch
}

// apply adds one line of the hook to r; it returns the event's kind.
func (r *Run) apply(line []byte) (string, string, error) {
	var e event
	if err := json.Unmarshal(line, &e); err != nil {
		return "", "", fmt.Errorf("the hook's events hold a line that is not the hook's (%q: %v): something in the script wrote to the hook's file descriptor", line, err)
	}
	if e.R != nil {
		return r.applyRank(*e.R, e, line)
	}
	return r.applyEvent(e, line)
}

// applyEvent adds the event e, read from line, to r.
func (r *Run) applyEvent(e event, line []byte) (string, string, error) {
	var err error
	switch e.Ev {
	case "start":
		err = json.Unmarshal(line, &r.Start)
	case "loader":
		var l Loader
		err = json.Unmarshal(line, &l)
		r.Loaders = append(r.Loaders, l)
	case "retarget":
		err = r.retarget(line)
	case "step":
		err = r.addStep(line)
	case "other":
		err = r.addOther(line)
	case "unsure":
		r.Unsure = true
	case "thread":
		var t struct{ Name, Site string }
		err = json.Unmarshal(line, &t)
		r.Thread, r.ThreadSite = t.Name, t.Site
	case "stage":
		err = r.addBatch(line)
	case "member":
		err = r.setGroup(line)
	case "pin":
		r.Pins = append(r.Pins, time.Duration(e.NS))
	case "cpu":
		if r.MainCPU == nil {
			r.MainCPU = map[int]time.Duration{}
		}
		r.MainCPU[e.At] = time.Duration(e.NS)
	case "ranks":
		r.World = max(r.World, e.N)
	case "switch":
		r.SwitchAt = e.I + 1 // 0: not said
	case "done":
		r.Done = true
	}
	return e.Ev, e.Msg, err
}

// addStep adds the step in line, and counts it for each other loader
// that delivered a batch since the step before.
func (r *Run) addStep(line []byte) error {
	var s Step
	err := json.Unmarshal(line, &s)
	r.Steps = append(r.Steps, s)
	for _, o := range r.Others {
		if o.pending > 0 {
			o.Steps++
			o.StepWait += o.pendWait
			o.pending, o.pendWait = 0, 0
		}
	}
	return err
}

// addOther adds the batch in line, delivered by a loader other than
// the training loop's, to that loader's Other.
func (r *Run) addOther(line []byte) error {
	var o struct {
		L    int           `json:"l"`
		Wait time.Duration `json:"wait"`
	}
	err := json.Unmarshal(line, &o)
	if r.Others == nil {
		r.Others = map[int]*Other{}
	}
	if r.Others[o.L] == nil {
		r.Others[o.L] = &Other{}
	}
	x := r.Others[o.L]
	x.Batches++
	x.Wait += o.Wait
	x.pending++
	x.pendWait += o.Wait
	return err
}

// addBatch adds the batch in line where the training loop's loader, or
// one measured beside it, made it (or no loader is the target yet).
func (r *Run) addBatch(line []byte) error {
	var b Batch
	err := json.Unmarshal(line, &b)
	if ld, ok := r.Target(); !ok || b.Loader == 0 || b.Loader == ld.Index || r.member(b.Loader, ld.Index) {
		r.Batches = append(r.Batches, b)
	}
	return err
}

// setGroup sets the Group of the loader line names: the training
// loop's loader it is measured beside.
func (r *Run) setGroup(line []byte) error {
	var m struct {
		Index int `json:"index"`
		Of    int `json:"of"`
	}
	err := json.Unmarshal(line, &m)
	for i := range r.Loaders {
		if r.Loaders[i].Index == m.Index {
			r.Loaders[i].Group = m.Of
		}
	}
	return err
}

// retarget starts the measurement again on the loader the event names:
// the loop first measured trained nothing, and that loader's steps train.
func (r *Run) retarget(line []byte) error {
	var l Loader
	var from struct {
		From int `json:"from"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return err
	}
	if err := json.Unmarshal(line, &from); err != nil {
		return err
	}
	for i := range r.Loaders {
		r.Loaders[i].Target, r.Loaders[i].Group = false, 0
	}
	r.Loaders = slices.DeleteFunc(r.Loaders, func(x Loader) bool { return x.Index == l.Index })
	r.Loaders = append(r.Loaders, l)
	slices.SortFunc(r.Loaders, func(a, b Loader) int { return a.Index - b.Index })
	r.Steps, r.Pins, r.MainCPU, r.Others, r.Unsure = nil, nil, nil, nil, false
	r.Batches = slices.DeleteFunc(r.Batches, func(b Batch) bool { return b.Loader != l.Index })
	r.Retarget.From = from.From
	return nil
}

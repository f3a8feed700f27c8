package ownloop

import (
	_ "embed"
	"encoding/json"
	"fmt"
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
	Index          int    `json:"index"`
	Site           string `json:"site"` // file:line where it was made
	Kind           string `json:"kind"` // DataLoader, or the wrapped iterable's type
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
	Warmup   int `json:"warmup"`
	Measured struct {
		GetItem  bool `json:"getitem"`
		Split    bool `json:"split"`
		Collate  bool `json:"collate"`
		Iterable bool `json:"iterable"` // an IterableDataset: its __iter__ timed per sample
	} `json:"measured"`
}

// String names the loader as the report does.
func (l Loader) String() string {
	if l.Kind != "DataLoader" {
		return fmt.Sprintf("#%d %s at %s", l.Index, l.Kind, l.Site)
	}
	return fmt.Sprintf("#%d DataLoader(%s, batch_size=%d, num_workers=%d) at %s", l.Index, l.Dataset, l.BatchSize, l.Workers, l.Site)
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
}

// Batch is one batch made by the training loader, in a worker (Worker
// -1: the main process): its samples' __getitem__ time, the part of it in
// the dataset's .loader and .transform, its collate time, and the
// worker's CPU time so far.
type Batch struct {
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
	// Wall is the command's time from its start to its end.
	Wall time.Duration
}

// want is the steps the run needs under s.
func (r *Run) want(s Settings) int {
	if l, ok := r.Target(); ok && s.Mode == "ladder" && s.Warmup <= 0 && l.Warmup > 0 {
		return l.Warmup + s.Steps
	}
	return s.Total()
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
	Ev  string `json:"ev"`
	Msg string `json:"msg"`
	NS  int64  `json:"ns"`
	At  int    `json:"at"`
}

// apply adds one line of the hook to r; it returns the event's kind.
func (r *Run) apply(line []byte) (string, string, error) {
	var e event
	if err := json.Unmarshal(line, &e); err != nil {
		return "", "", fmt.Errorf("hook event %q: %w", line, err)
	}
	var err error
	switch e.Ev {
	case "start":
		err = json.Unmarshal(line, &r.Start)
	case "loader":
		var l Loader
		err = json.Unmarshal(line, &l)
		r.Loaders = append(r.Loaders, l)
	case "step":
		var s Step
		err = json.Unmarshal(line, &s)
		r.Steps = append(r.Steps, s)
	case "stage":
		var b Batch
		err = json.Unmarshal(line, &b)
		r.Batches = append(r.Batches, b)
	case "pin":
		r.Pins = append(r.Pins, time.Duration(e.NS))
	case "cpu":
		if r.MainCPU == nil {
			r.MainCPU = map[int]time.Duration{}
		}
		r.MainCPU[e.At] = time.Duration(e.NS)
	case "done":
		r.Done = true
	}
	return e.Ev, e.Msg, err
}

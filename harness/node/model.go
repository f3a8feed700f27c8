package node

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// DefaultMinAU is MLPerf Storage's threshold for UNet3D and ResNet-50:
// an accelerator is kept busy when its AU is at least 0.90.
const DefaultMinAU = 0.90

// Profile is what the node model needs of one run of the pipeline (level
// none), normally a single rank's: what one accelerator asks of the host
// and what the host has.
type Profile struct {
	Cores      float64 // the machine's cores
	OtherCores float64 // other processes' CPU use during the run, in cores
	// OtherThreads is the other processes' runnable threads during the
	// run (mean), negative where unknown: described, not modelled (the
	// scheduler shares the cores between groups of processes, not
	// threads; obtainable).
	OtherThreads float64
	Batch        int           // samples per step per accelerator
	Workers      int           // loader workers per rank (threads that share its CPU)
	Step         time.Duration // the emulated device's step
	// AU is the rank's measured AU: below 1 where its own loader
	// workers cannot keep up, whatever the host has to spare.
	AU float64
	// CPUPerSample is the rank process's CPU time per sample (loader and
	// training loop together).
	CPUPerSample time.Duration
	// BytesPerSample and RequestsPerSample are what a sample costs the
	// storage (0 for synthetic data).
	BytesPerSample, RequestsPerSample float64
	// MemoryPerRank is a rank's memory estimate, Memory what the machine
	// has available (0: unknown).
	MemoryPerRank, Memory int64
	// LinkBandwidth (bytes/s) and LinkRequestRate (requests/s) are the
	// emulated link's caps, 0 where there is none or no cap.
	LinkBandwidth, LinkRequestRate float64
}

// Validate reports what makes p unusable.
func (p Profile) Validate() error {
	switch {
	case p.Cores <= 0:
		return fmt.Errorf("node profile: %v cores", p.Cores)
	case p.Batch <= 0 || p.Step <= 0 || p.Workers <= 0:
		return fmt.Errorf("node profile: batch %d, step %v and workers %d must be positive", p.Batch, p.Step, p.Workers)
	case !(p.AU > 0 && p.AU <= 1.5):
		return fmt.Errorf("node profile: AU %v out of (0, 1.5]", p.AU)
	case p.CPUPerSample <= 0:
		return fmt.Errorf("node profile: no CPU time per sample (the run's CPU could not be read)")
	}
	return nil
}

// Demand is the samples per second one accelerator takes at full speed:
// a batch per step.
func (p Profile) Demand() float64 { return float64(p.Batch) / p.Step.Seconds() }

// The resources a node runs out of.
const (
	ResourceLoader   = "loader"    // the rank's own workers: AU below 1 at one accelerator
	ResourceCores    = "cores"     // CPU per sample × samples/s against the cores
	ResourceMemory   = "memory"    // the ranks' memory estimate against the available memory
	ResourceLink     = "link"      // the emulated link's bandwidth
	ResourceRequests = "link-rate" // the emulated link's request rate
	ResourceStorage  = "storage"   // bytes/s from disk: demand only, no capacity known
)

// Bound is where one resource runs out: at Accelerators accelerators it
// is used up, each then at AU 1 (+Inf where it never runs out).
type Bound struct {
	Resource     string
	Accelerators float64
	// Demand says what one accelerator asks of it, Have what there is.
	Demand, Have string
}

// Bounds are the resources' bounds, the one that runs out first first.
// A rank whose own AU is below minAU at one accelerator is bound by its
// loader (at 0 accelerators: the node keeps none busy).
func (p Profile) Bounds(minAU float64) []Bound {
	a := p.Demand()
	var out []Bound
	perAcc := p.CPUPerSample.Seconds() * a
	out = append(out, Bound{ResourceCores, p.coresBound(perAcc),
		fmt.Sprintf("%.3g cores (%v CPU/sample × %.4g samples/s) on %d worker threads", perAcc, p.CPUPerSample.Round(time.Microsecond), a, p.Workers),
		fmt.Sprintf("%.3g cores, the other processes using %.3g", p.Cores, max(p.OtherCores, 0))})
	if p.AU < minAU {
		out = append(out, Bound{ResourceLoader, 0, "more than its own loader workers give", fmt.Sprintf("AU %.3f at one accelerator", p.AU)})
	}
	if p.Memory > 0 && p.MemoryPerRank > 0 {
		out = append(out, Bound{ResourceMemory, float64(p.Memory) / float64(p.MemoryPerRank),
			fmt.Sprintf("%.3g GiB a rank (estimate)", float64(p.MemoryPerRank)/(1<<30)), fmt.Sprintf("%.3g GiB available", float64(p.Memory)/(1<<30))})
	}
	if p.BytesPerSample > 0 {
		bps := p.BytesPerSample * a
		if p.LinkBandwidth > 0 {
			out = append(out, Bound{ResourceLink, p.LinkBandwidth / bps,
				fmt.Sprintf("%.4g Gbit/s", bps*8/1e9), fmt.Sprintf("%.4g Gbit/s", p.LinkBandwidth*8/1e9)})
		} else {
			out = append(out, Bound{ResourceStorage, math.Inf(1), fmt.Sprintf("%.4g MB/s", bps/1e6), "capacity not known"})
		}
	}
	if p.RequestsPerSample > 0 && p.LinkRequestRate > 0 {
		rps := p.RequestsPerSample * a
		out = append(out, Bound{ResourceRequests, p.LinkRequestRate / rps,
			fmt.Sprintf("%.4g requests/s", rps), fmt.Sprintf("%.4g requests/s", p.LinkRequestRate)})
	}
	slices.SortStableFunc(out, func(x, y Bound) int { return cmp.Compare(x.Accelerators, y.Accelerators) })
	return out
}

// obtainable is the cores the ranks can get, asking demand cores, when
// the other processes use OtherCores: the scheduler shares the cores
// between groups of processes (Linux's autogroups and cgroups: a
// session, a service, a container each) by max-min fairness, and the
// other processes are taken as one group. A group that asks less than
// half gets what it asks; so the ranks get what they ask up to what the
// others leave, and never less than half the cores when both ask more.
func (p Profile) obtainable(demand float64) float64 {
	o := max(p.OtherCores, 0)
	return min(demand, max(p.Cores-o, p.Cores/2))
}

// coresAU is the share of its demand each rank gets of the cores in a
// node of n accelerators, each asking perAcc cores.
func (p Profile) coresAU(n int, perAcc float64) float64 {
	d := float64(n) * perAcc
	if d <= 0 {
		return 1
	}
	return min(1, p.obtainable(d)/d)
}

// coresBound is the accelerator count at which coresAU falls below 1.
func (p Profile) coresBound(perAcc float64) float64 {
	if perAcc <= 0 {
		return math.Inf(1)
	}
	return p.obtainable(math.Inf(1)) / perAcc
}

// PredictAU is the model's AU of every rank of a node of n accelerators:
// the host's throughput shared by n ranks, none faster than one rank
// alone; 0 where n ranks do not fit in memory. With C cores, the other
// processes using o of them and f cores asked per accelerator, the
// ranks get max-min fairness's share between them and the others
// (obtainable): at most max(C − o, C/2) cores for the n·f they ask.
// Every other resource r of the profile (the link's bandwidth and
// request rate) caps it at N_r / n:
//
//	AU(n) = min(AU(1), max(C − o, C/2) / (n·f), N_r / n)
func (p Profile) PredictAU(n int) float64 {
	au := min(p.AU, 1)
	for _, b := range p.Bounds(0) {
		switch b.Resource {
		case ResourceMemory:
			if float64(n) > b.Accelerators {
				return 0
			}
		case ResourceCores:
			au = min(au, p.AU*p.coresAU(n, p.CPUPerSample.Seconds()*p.Demand()))
		case ResourceLoader, ResourceStorage:
		default:
			au = min(au, b.Accelerators/float64(n))
		}
	}
	return au
}

// MaxAccelerators is the largest n up to limit whose predicted AU is at
// least minAU (0 when not even one).
func (p Profile) MaxAccelerators(minAU float64, limit int) int {
	best := 0
	for n := 1; n <= limit; n++ {
		if p.PredictAU(n) >= minAU {
			best = n
		}
	}
	return best
}

// Need is what a node of n accelerators at AU minAU would take of each
// resource the profile knows.
type Need struct {
	Resource string
	Need     string
}

// Needs says what n accelerators at minAU would take: the cores (the
// others' use included), the memory, and for a dataset in a bucket the
// link's Gbit/s and requests/s.
func (p Profile) Needs(n int, minAU float64) []Need {
	rate := minAU * float64(n) * p.Demand() // samples/s
	// obtainable ≥ minAU × n·f: C ≥ minAU·n·f + o (the others keep
	// theirs), or C ≥ 2·minAU·n·f (the fair half), whichever is less.
	ranks := rate * p.CPUPerSample.Seconds()
	cores := min(ranks+max(p.OtherCores, 0), 2*ranks)
	out := []Need{{ResourceCores, fmt.Sprintf("%.3g cores (the ranks use %.3g, the other processes %.3g)",
		cores, ranks, max(p.OtherCores, 0))}}
	if p.MemoryPerRank > 0 {
		out = append(out, Need{ResourceMemory, fmt.Sprintf("%.3g GiB (estimate)", float64(int64(n)*p.MemoryPerRank)/(1<<30))})
	}
	if p.BytesPerSample > 0 {
		out = append(out, Need{ResourceLink, fmt.Sprintf("%.4g Gbit/s (%.4g MB/s)", rate*p.BytesPerSample*8/1e9, rate*p.BytesPerSample/1e6)})
	}
	if p.RequestsPerSample > 0 {
		out = append(out, Need{ResourceRequests, fmt.Sprintf("%.4g requests/s", rate*p.RequestsPerSample)})
	}
	if p.AU < minAU {
		out = append(out, Need{ResourceLoader, fmt.Sprintf("more loader workers per rank: one rank alone reaches AU %.3f", p.AU)})
	}
	return out
}

// ProfileOf is the profile of row's runs at level none (medians over
// them), on a machine of cores cores with batch samples a step of step
// and workers loader workers a rank: the smallest rank's AU, the CPU per
// sample, the other processes' cores, and the bytes and requests per
// sample. Memory and the link's caps are the caller's to set.
func ProfileOf(row Row, cores float64, batch, workers int, step time.Duration) (Profile, error) {
	p := Profile{Cores: cores, Batch: batch, Workers: workers, Step: step, OtherThreads: -1}
	if row.Runs == 0 {
		return p, fmt.Errorf("node profile: no finished run of %d accelerators at level none", row.Accelerators)
	}
	if row.Stall > 0 {
		return p, fmt.Errorf("node profile: a run of %d accelerators stalled (one step took %v, at the barrier): not a profile of the loader; run it again", row.Accelerators, row.Stall.Round(time.Millisecond))
	}
	orZero := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	p.AU = orZero(row.AUMin)
	p.CPUPerSample = time.Duration(orZero(row.CPUPerSample))
	p.OtherCores = orZero(row.OtherCores)
	if !math.IsNaN(row.OtherThreads) {
		p.OtherThreads = row.OtherThreads
	}
	if sps := orZero(row.SamplesPerSec); sps > 0 {
		p.BytesPerSample = orZero(row.BytesPerSec) / sps
		p.RequestsPerSample = orZero(row.Requests) / sps
	}
	return p, p.Validate()
}

package workloads

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/blocks/device"
	"github.com/headspace-bench/headspace/harness/blocks/procloader"
	"github.com/headspace-bench/headspace/harness/engines/peer"
)

// TestMain serves as a process-mode loader worker when started as one
// (BenchmarkLoaders starts this test binary as its workers), and checks
// for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	procloader.ServeIfSelfWorker()
	goleak.VerifyTestMain(m)
}

// BenchmarkHeadspace runs the headspace analysis once per iteration and
// reports each phase's median step time (before-ns, after-ns), the
// headspace (headspace-%) and the bounding stage's share of task time.
func BenchmarkHeadspace(b *testing.B) {
	h, dev := DefaultHeadspace(), DocumentDevice()
	if testing.Short() {
		h, dev.Step = QuickHeadspace(), QuickStep
	}
	for range b.N {
		d, err := device.NewEmulated(dev)
		if err != nil {
			b.Fatal(err)
		}
		rep, recs, err := h.Run(context.Background(), d)
		d.Close()
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) == 0 {
			b.Fatal("no records")
		}
		b.ReportMetric(float64(rep.Before.Median), "before-ns")
		b.ReportMetric(float64(rep.After.Median), "after-ns")
		b.ReportMetric(rep.HeadspacePercent(), "headspace-%")
	}
}

// BenchmarkLoaders measures goroutine and process workers at each worker
// count, one run per iteration, with the metrics `headspace loaders`
// writes (ttfb-ns, samples/s, peak-rss-B, cpu-s).
func BenchmarkLoaders(b *testing.B) {
	l := DefaultLoaders(procloader.SelfWorker())
	if testing.Short() {
		l = QuickLoaders(procloader.SelfWorker())
	}
	for _, mode := range l.Modes {
		for _, w := range l.Workers {
			b.Run(fmt.Sprintf("mode=%s/workers=%d", mode, w), func(b *testing.B) {
				one := l
				one.Modes, one.Workers = []string{mode}, []int{w}
				for range b.N {
					_, recs, err := one.Run(context.Background(), nil)
					if err != nil {
						b.Fatal(err)
					}
					reportRecord(b, recs[0])
				}
			})
		}
	}
}

// BenchmarkSim simulates the post's three loaders, reporting batches
// trained in the simulated time, the model's idle share and the mean
// queue.
func BenchmarkSim(b *testing.B) {
	s := DefaultSim()
	for _, c := range s.Cases {
		b.Run(fmt.Sprintf("load=%v", c.Config.Load), func(b *testing.B) {
			one := Sim{Cases: []SimCase{c}}
			for range b.N {
				_, recs, err := one.Run()
				if err != nil {
					b.Fatal(err)
				}
				reportRecord(b, recs[0])
			}
		})
	}
}

// BenchmarkPeer runs the document's PyTorch pipeline beside ours; the
// torch side needs /usr/bin/python3 with torch, torchvision, scipy and PIL
// (`make peer` installs them), and ours runs without.
func BenchmarkPeer(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "peers", "torch", "dataloader.py")
	p := DefaultPeer("/usr/bin/python3", script)
	if testing.Short() {
		p.Config.Settings = peer.Settings{Width: 96, Height: 96, Crop: 32, Batch: 8, Batches: 4, Seed: 1}
		p.Config.Workers, p.Config.Count = []int{1}, 1
	}
	p.Config.Impls = []string{peer.Naive, peer.Fast}
	if _, err := exec.LookPath(p.Config.Peer.Python); err == nil && p.Config.Peer.Check(context.Background()) == nil {
		p.Config.Impls = peer.Impls
	} else {
		b.Logf("torch is not importable by %s: measuring ours alone (make peer installs it)", p.Config.Peer.Python)
	}
	for range b.N {
		res, recs, err := p.Run(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, row := range peer.Summarize(res.Measurements) {
			b.ReportMetric(row.SamplesPerSec, row.Impl+"-samples/s")
		}
		if len(recs) == 0 {
			b.Fatal("no records")
		}
	}
}

package node

import (
	"math"
	"strings"
	"testing"
	"time"
)

// one is a rank asking 0.25 cores (1 ms a sample, batch 10 a 40 ms step)
// on 2 cores with one worker.
func one() Profile {
	return Profile{Cores: 2, Batch: 10, Workers: 1, Step: 40 * time.Millisecond, AU: 1, CPUPerSample: time.Millisecond, OtherThreads: -1}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPredictAU(t *testing.T) {
	p := one()
	// Alone on the machine: 8 ranks fit 2 cores exactly, 16 get half.
	for n, want := range map[int]float64{1: 1, 4: 1, 8: 1, 16: 0.5} {
		if got := p.PredictAU(n); !near(got, want) {
			t.Errorf("no others, %d accelerators: AU %v, want %v", n, got, want)
		}
	}
	if got := p.MaxAccelerators(0.9, 64); got != 8 {
		t.Errorf("MaxAccelerators = %d, want 8", got)
	}
	// Other processes using 1.5 cores: the ranks get what they leave,
	// 0.5 cores, but never less than half the machine (1 core) when both
	// ask more: 4 ranks (1 core) are fed, 8 get half.
	p.OtherCores = 1.5
	for n, want := range map[int]float64{1: 1, 4: 1, 8: 0.5} {
		if got := p.PredictAU(n); !near(got, want) {
			t.Errorf("1.5 other cores, %d accelerators: AU %v, want %v", n, got, want)
		}
	}
	if b := p.Bounds(0.9)[0]; b.Resource != ResourceCores || !near(b.Accelerators, 4) {
		t.Errorf("binding %+v, want cores at 4", b)
	}
	// Others using 0.5: the ranks get 1.5 cores, 6 accelerators.
	p.OtherCores = 0.5
	if got := p.PredictAU(12); !near(got, 0.5) {
		t.Errorf("0.5 other cores, 12 accelerators: AU %v, want 0.5", got)
	}
	// A rank that is slow alone caps every count.
	p = one()
	p.AU = 0.8
	if got := p.PredictAU(2); !near(got, 0.8) {
		t.Errorf("AU(1) 0.8: AU(2) = %v", got)
	}
	if b := p.Bounds(0.9)[0]; b.Resource != ResourceLoader || b.Accelerators != 0 {
		t.Errorf("binding %+v, want the loader", b)
	}
	// Memory: 3 ranks fit, the 4th does not.
	p = one()
	p.MemoryPerRank, p.Memory = 1<<30, 3<<30
	if p.PredictAU(3) != 1 || p.PredictAU(4) != 0 {
		t.Errorf("memory for 3: AU(3) %v, AU(4) %v", p.PredictAU(3), p.PredictAU(4))
	}
	// A link of 10 MB/s and 1 kB a sample (250 samples/s): 40 accelerators.
	p = one()
	p.CPUPerSample = time.Microsecond
	p.BytesPerSample, p.LinkBandwidth = 1000, 10e6
	if b := p.Bounds(0.9)[0]; b.Resource != ResourceLink || !near(b.Accelerators, 40) {
		t.Errorf("binding %+v, want the link at 40", b)
	}
	if got := p.PredictAU(80); !near(got, 0.5) {
		t.Errorf("link: AU(80) = %v, want 0.5", got)
	}
	needs := p.Needs(80, 0.9)
	var link string
	for _, n := range needs {
		if n.Resource == ResourceLink {
			link = n.Need
		}
	}
	if !strings.Contains(link, "Gbit/s") {
		t.Errorf("needs %v: no link figure", needs)
	}
}

func TestParseCPUTimes(t *testing.T) {
	c, err := ParseCPUTimes([]byte("cpu  100 50 20 900 10 1 2 3 0 0\ncpu0 1 2 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Normal != 126*clockTick || c.Niced != 50*clockTick {
		t.Errorf("%+v", c)
	}
	d := CPUTimes{Normal: 200 * clockTick, Niced: 80 * clockTick}
	if Competing(c, d, false) != 74*clockTick || Competing(c, d, true) != 104*clockTick {
		t.Errorf("competing %v %v", Competing(c, d, false), Competing(c, d, true))
	}
	for _, bad := range []string{"intr 1 2 3", "", "cpu 1 2 3 4", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 x 4 5 6 7 8", "cpu 1 -2 3 4 5 6 7 8",
		"cpu 9223372036854775807 0 0 0 0 0 0 0", "cpu 1 2 3 4 5 6 7 115292150461"} {
		if c, err := ParseCPUTimes([]byte(bad)); err == nil {
			t.Errorf("ParseCPUTimes(%q) = %+v, want an error", bad, c)
		}
	}
	if c, err := ParseCPUTimes([]byte("cpu 1 2 3 4 5 6 7 8 9 10")); err != nil || c.Normal+c.Niced != (1+2+3+6+7+8)*clockTick {
		t.Errorf("every field but idle and iowait, guest's counted in user's: %+v, %v", c, err)
	}
}

func FuzzParseCPUTimes(f *testing.F) {
	f.Add([]byte("cpu  118462 0 59180 1896591 1088 0 1334 0 0 0\n"))
	f.Add([]byte("cpu 1 2 3 4 5 6 7 8"))
	f.Add([]byte("intr 1 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCPUTimes(data)
		if err == nil && (c.Normal < 0 || c.Niced < 0 || c.Normal+c.Niced < 0) {
			t.Fatalf("negative busy time %+v from %q", c, data)
		}
	})
}

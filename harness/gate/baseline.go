package gate

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// BaselineDir is where baselines are kept, one file per machine.
const BaselineDir = "results/baseline"

// errFound stops a Scan at the first result.
var errFound = errors.New("found")

// Machine is the machine a results file was recorded on, as the gate and
// the history key it: the device, the GPU where one is recorded, the CPU
// model and the cores.
type Machine struct{ Device, GPU, CPU, Cores string }

// MachineOf reads the machine from a result's configuration: its device,
// gpu, cpu and cores lines; where there is no cores line (files written
// before it was recorded), the GOMAXPROCS suffix of the benchmark's name,
// "-16"; where there is neither, "0".
func MachineOf(r *benchfmt.Result) Machine {
	m := Machine{Device: r.GetConfig("device"), GPU: r.GetConfig("gpu"), CPU: r.GetConfig("cpu"), Cores: r.GetConfig("cores")}
	if m.Cores == "" {
		m.Cores = "0"
		if _, procs := resultfile.TrimProcs(r.Name); procs != "" {
			m.Cores = procs
		}
	}
	return m
}

// Key names the machine in paths: the device, the GPU (when there is
// one), the CPU model and the cores, in lower case with every run of
// other characters than letters and digits as one "-":
// "emulated-amd-epyc-2c", "cuda-nvidia-h100-80gb-hbm3-intel-r-xeon-r-processor-16c".
// It is empty when the machine records no device or no CPU.
func (m Machine) Key() string {
	if m.Device == "" || m.CPU == "" {
		return ""
	}
	s := m.Device
	if m.GPU != "" {
		s += " " + m.GPU
	}
	return slug(s + " " + m.CPU + " " + m.Cores + "c")
}

// ReadMachine returns the machine of the first result in the file at
// path (see MachineOf); an error when it cannot be read or names no
// machine.
func ReadMachine(path string) (Machine, error) {
	var m Machine
	found := false
	_, err := resultfile.Scan(path, func(r *benchfmt.Result) error {
		m, found = MachineOf(r), true
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return Machine{}, err
	}
	if !found || m.Key() == "" {
		return Machine{}, fmt.Errorf("%s records no device or cpu (or no results): it names no machine", path)
	}
	return m, nil
}

// BaselinePath is the baseline that the results file at path gates
// against: BaselineDir/<machine key>.txt (Machine.Key), such as
// "results/baseline/emulated-amd-epyc-2c.txt" or
// "results/baseline/cuda-nvidia-h100-80gb-hbm3-intel-r-xeon-r-processor-16c.txt".
// A file that records no device or no CPU has no machine to name;
// BaselinePath says so.
func BaselinePath(path string) (string, error) {
	m, err := ReadMachine(path)
	if err != nil {
		return "", err
	}
	return filepath.Join(BaselineDir, m.Key()+".txt"), nil
}

// slug is s in lower case with every run of characters other than ASCII
// letters and digits replaced by one "-", and none at either end.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

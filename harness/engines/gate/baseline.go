package gate

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/blocks/results"
)

// BaselineDir is where baselines are kept, one file per machine.
const BaselineDir = "results/baseline"

// errFound stops a Scan at the first result.
var errFound = errors.New("found")

// BaselinePath is the baseline that the results file at path gates
// against: BaselineDir/<device>-<cpu>-<cores>c.txt, named after the
// device, the CPU model and the cores the file records (its "cores:"
// line, else the GOMAXPROCS suffix of its first benchmark's name), in
// lower case with every run of other characters than letters and digits
// as one "-": "results/baseline/emulated-amd-epyc-2c.txt". A file that
// records no device or no CPU has no machine to name; BaselinePath says
// so.
func BaselinePath(path string) (string, error) {
	var device, cpu, cores string
	_, err := results.Scan(path, func(r *benchfmt.Result) error {
		device, cpu, cores = r.GetConfig("device"), r.GetConfig("cpu"), r.GetConfig("cores")
		if cores == "" {
			// Parts gives the GOMAXPROCS suffix as a last part "-N".
			if _, parts := r.Name.Parts(); len(parts) > 0 && strings.HasPrefix(string(parts[len(parts)-1]), "-") {
				cores = string(parts[len(parts)-1][1:])
			}
		}
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", err
	}
	if device == "" || cpu == "" {
		return "", fmt.Errorf("%s records no device or cpu (or no results): it names no machine", path)
	}
	if cores == "" {
		cores = "0"
	}
	return filepath.Join(BaselineDir, slug(device+" "+cpu+" "+cores+"c")+".txt"), nil
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

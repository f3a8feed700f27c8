package peer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// ReportKeys are the configuration lines a results file must hold for
// ReportOf to rebuild the report the run wrote: the machine's (cpu,
// cores, distro, go, commit), the command line, and the settings that
// WriteMarkdown states (raw-size, crop, batch, batches, seed, rounds).
// headspace peer --out records all of them.
var ReportKeys = []string{"cpu", "cores", "distro", "go", "commit", "command", "raw-size", "crop", "batch", "batches", "seed", "rounds"}

// configLines is a file's configuration lines by key, or an error naming
// path and every one of keys it lacks, with hint.
func configLines(config []resultfile.Config, keys []string, path, hint string) (map[string]string, error) {
	get := map[string]string{}
	for _, c := range config {
		get[c.Key] = c.Value
	}
	var missing []string
	for _, k := range keys {
		if _, ok := get[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no %s line (%s)", path, strings.Join(missing, ", "), hint)
	}
	return get, nil
}

// ReportOf rebuilds, from a results file's configuration lines (config,
// in order) and its runs (ms, decoded by the caller through
// workloads.PeerCodec), the report the run that wrote it wrote with
// --report: the machine, the command and the settings from the lines
// (ReportKeys; data and decoder where the run read a dataset on disk),
// the peer's versions from the same lines, and the rows from the runs
// (Summarize). Nothing is measured and nothing is taken from this
// machine, so the report is the file's. Figures are left empty: where
// they go is the caller's. A key the report needs that the lines lack,
// or a value that does not parse, is an error naming path and the key.
func ReportOf(path string, config []resultfile.Config, ms []Measurement) (Report, error) {
	o := Output{Config: config, Results: ms}
	get, err := configLines(o.Config, ReportKeys, path, "headspace peer --out records them; the report cannot be rebuilt without them")
	if err != nil {
		return Report{}, err
	}
	r := Report{PeerConfig: append([]resultfile.Config(nil), o.Config...), Command: get["command"], Rows: Summarize(o.Results)}
	if r.Machine, r.Settings, err = readSettings(path, get, intLine{"rounds", &r.Count}); err != nil {
		return Report{}, err
	}
	r.Settings.Data = get["data"]
	return r, nil
}

// intLine is a configuration line that must hold a positive whole number,
// and where it goes.
type intLine struct {
	key string
	to  *int
}

// readSettings reads what both reports rebuild from a file's configuration
// lines get: the machine (cpu, cores, distro, go, commit, goos, goarch)
// and the settings (raw-size, crop, batch, batches, seed, decoder), then
// the lines of more. The first line that does not parse is an error
// naming path and its key.
func readSettings(path string, get map[string]string, more ...intLine) (machine.Machine, Settings, error) {
	m := machine.Machine{CPU: get["cpu"], Distro: get["distro"], Go: get["go"], Commit: get["commit"], OS: get["goos"], Arch: get["goarch"]}
	var s Settings
	for _, p := range append([]intLine{{"cores", &m.Cores}, {"crop", &s.Crop}, {"batch", &s.Batch}, {"batches", &s.Batches}}, more...) {
		n, err := strconv.Atoi(get[p.key])
		if err != nil || n <= 0 {
			return m, s, fmt.Errorf("%s: %s %q is not a positive whole number", path, p.key, get[p.key])
		}
		*p.to = n
	}
	w, h, ok := strings.Cut(get["raw-size"], "x")
	s.Width, _ = strconv.Atoi(w)
	s.Height, _ = strconv.Atoi(h)
	if !ok || s.Width <= 0 || s.Height <= 0 {
		return m, s, fmt.Errorf("%s: raw-size %q is not WxH", path, get["raw-size"])
	}
	var err error
	if s.Seed, err = strconv.ParseUint(get["seed"], 10, 64); err != nil {
		return m, s, fmt.Errorf("%s: seed %q is not a whole number", path, get["seed"])
	}
	// A file records the decoder (only with a dataset on disk) by name and
	// version ("turbojpeg libjpeg-turbo 2.1.5"); the report names the first.
	if d := strings.Fields(get["decoder"]); len(d) > 0 {
		s.Decoder = d[0]
	}
	return m, s, nil
}

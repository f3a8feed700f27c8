package link

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/internal/setting"
)

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string // a part of the error; "" for none
	}{
		{in: "10Gbit/s", want: 1_250_000_000},
		{in: "10 Gb/s", want: 1_250_000_000},
		{in: "10Gbps", want: 1_250_000_000},
		{in: "100Mbit/s", want: 12_500_000},
		{in: "100MB/s", want: 100_000_000},
		{in: "1.5MiB/s", want: 1_572_864},
		{in: "90MB/s", want: 90_000_000},
		{in: "8bit/s", want: 1},
		{in: "12bit/s", want: 1}, // 1.5 B/s: the fraction dropped
		{in: "0", want: 0},
		{in: "unlimited", want: 0},
		{in: "1bit/s", err: "below 1 B/s"},
		{in: "10", err: `unit ""`},
		{in: "10 mb/s", err: `unit "mb/s"`},
		{in: "-1MB/s", err: "not start with a decimal number"},
		{in: "1..2MB/s", err: "not start with a decimal number"},
		{in: ".MB/s", err: "not start with a decimal number"},
		{in: "", err: "not start with a decimal number"},
		{in: "9Tbit/s", err: "above 8Tbit/s"},
	} {
		got, err := ParseBandwidth(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBandwidth(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBandwidth(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{1_250_000_000, "10Gbit/s"},
		{100_000_000, "800Mbit/s"},
		{12_500_000, "100Mbit/s"},
		{1_572_864, "12582912bit/s"},
		{125, "1kbit/s"},
		{1, "8bit/s"},
		{0, "unlimited"},
	} {
		if got := FormatBandwidth(tc.in); got != tc.want {
			t.Errorf("FormatBandwidth(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fault
		err  bool
	}{
		{in: "never", want: Fault{}},
		{in: "0", want: Fault{}},
		{in: "every:50", want: Fault{Every: 50}},
		{in: "every:1", want: Fault{Every: 1}},
		{in: "0.25", want: Fault{Probability: 0.25}},
		{in: "1%", want: Fault{Probability: 0.01}},
		{in: "100%", want: Fault{Probability: 1}},
		{in: "every:0", err: true},
		{in: "every:x", err: true},
		{in: "every:-3", err: true},
		{in: "2", err: true},
		{in: "-0.1", err: true},
		{in: "NaN", err: true},
		{in: "101%", err: true},
		{in: "sometimes", err: true},
	} {
		got, err := ParseFault(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParse(t *testing.T) {
	cross := presets["cross-region"]
	withTruncate := cross
	withTruncate.Truncate = Fault{Every: 100}
	for _, tc := range []struct {
		in   string
		want Config
		err  string
	}{
		{in: "none", want: Config{}},
		{in: "cross-region", want: cross},
		{in: "cross-region,truncate=every:100", want: withTruncate},
		{in: "latency=5ms,jitter=1ms,bandwidth=1Gbit/s", want: Config{Latency: 5 * time.Millisecond, Jitter: time.Millisecond, Bandwidth: 125_000_000}},
		{in: "stall=0.1,stall-for=2s,seed=7,request-rate=100/s,reset=1%", want: Config{
			Stall: Fault{Probability: 0.1}, StallFor: 2 * time.Second, Seed: 7, RequestRate: 100, Reset: Fault{Probability: 0.01}}},
		{in: "same-region,latency=200us,jitter=0s", want: Config{
			Latency: 200 * time.Microsecond, Bandwidth: 1_250_000_000, ConnBandwidth: 90_000_000, RequestRate: 5500}},
		{in: "moon", err: `link: unknown preset "moon" (one of cross-region, home, none, same-region)`},
		{in: "home,colour=red", err: `link: unknown setting "colour"`},
		{in: "latency=1ms,latency=2ms", err: "link: latency given twice"},
		{in: "home,latency", err: `link: "latency" is not key=value`},
		{in: "latency=1ms,jitter=2ms", err: "link: jitter 2ms outside 0 to the latency (1ms)"},
		{in: "latency=-1ms", err: `link: latency "-1ms" is not a duration`},
		{in: "stall=every:3", err: "link: stall is set but stall-for is 0"},
		{in: "bandwidth=fast", err: `link: bandwidth "fast" does not start with a decimal number`},
		{in: "bandwidth=10 gbit/s", err: `link: bandwidth "10 gbit/s": unit "gbit/s"`},
		{in: "reset=2", err: `link: reset: fault "2" is not never`},
		{in: "request-rate=-5", err: `link: request-rate "-5" is not`},
		{in: "seed=-1", err: `link: seed: seed "-1" is not an unsigned integer`},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %v; want an error starting %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestPresets: every preset is valid, reads back from its String, and is
// named by PresetName; a changed preset is custom.
func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		if back, err := Parse(c.String()); err != nil || back != c {
			t.Errorf("preset %s: Parse(%q) = %+v, %v", name, c.String(), back, err)
		}
		if got := c.PresetName(); got != name {
			t.Errorf("preset %s: PresetName = %s", name, got)
		}
		c.Seed++
		if got := c.PresetName(); got != "custom" {
			t.Errorf("preset %s with another seed: PresetName = %s, want custom", name, got)
		}
	}
}

func TestSettings(t *testing.T) {
	c, err := Parse("cross-region,truncate=every:100,stall=0.5%,stall-for=1.5s")
	if err != nil {
		t.Fatal(err)
	}
	want := []setting.Setting{
		{Key: "link", Value: "custom"},
		{Key: "link-latency", Value: "30ms"},
		{Key: "link-jitter", Value: "5ms"},
		{Key: "link-bandwidth", Value: "1Gbit/s"},
		{Key: "link-conn-bandwidth", Value: "720Mbit/s"},
		{Key: "link-request-rate", Value: "5500/s"},
		{Key: "link-reset", Value: "never"},
		{Key: "link-stall", Value: "0.005"},
		{Key: "link-stall-for", Value: "1.5s"},
		{Key: "link-truncate", Value: "every:100"},
		{Key: "link-seed", Value: "0"},
	}
	if got := c.Settings(); !reflect.DeepEqual(got, want) {
		t.Errorf("Settings =\n%v\nwant\n%v", got, want)
	}
	if got := presets["home"].Settings()[0]; got.Value != "home" {
		t.Errorf("home's link setting = %v, want home", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		err  string
	}{
		{"both", Config{Reset: Fault{Every: 2, Probability: 0.5}}, "link: reset: both every and a probability set"},
		{"negative every", Config{Truncate: Fault{Every: -1}}, "link: truncate: every -1 outside"},
		{"probability", Config{Reset: Fault{Probability: 1.5}}, "link: reset: probability 1.5 outside"},
		{"bandwidth", Config{Bandwidth: -1}, "link: bandwidth -1 B/s outside"},
		{"conn-bandwidth", Config{ConnBandwidth: maxBandwidth + 1}, "link: conn-bandwidth"},
		{"request-rate NaN", Config{RequestRate: nan()}, "link: request-rate NaN outside"},
		{"stall-for", Config{StallFor: 2 * time.Hour}, "link: stall-for 2h0m0s outside"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.err)
		}
	}
}

func nan() float64 { var z float64; return z / z }

// FuzzParse: whatever Parse accepts is valid and reads back from its
// String; whatever it refuses, it refuses in one line that names the link.
func FuzzParse(f *testing.F) {
	for _, name := range PresetNames() {
		f.Add(name)
		f.Add(presets[name].String())
	}
	for _, s := range []string{
		"cross-region,truncate=every:100", "home,reset=1%,stall=0.01,stall-for=3s,seed=9",
		"latency=1.5ms,jitter=1ms,bandwidth=10 Gb/s,conn-bandwidth=1.5MiB/s,request-rate=0.5",
		"bandwidth=1e3MB/s", "latency=1ms,,", "=", "request-rate=0x10",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := Parse(spec)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "link: ") {
				t.Fatalf("Parse(%q): error %q is not one line starting link:", spec, msg)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted an invalid config: %v", spec, err)
		}
		back, err := Parse(c.String())
		if err != nil || back != c {
			t.Fatalf("Parse(%q) = %+v; its String %q reads back as %+v, %v", spec, c, c.String(), back, err)
		}
	})
}

// FuzzParseBandwidth: an accepted bandwidth is in range and reads back
// from its FormatBandwidth.
func FuzzParseBandwidth(f *testing.F) {
	for _, s := range []string{"10Gbit/s", "100MB/s", "1.5MiB/s", "0", "unlimited", "12bit/s", "7.77777 kB/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBandwidth(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseBandwidth(%q): error in more than one line: %q", s, err)
			}
			return
		}
		if b < 0 || b > maxBandwidth {
			t.Fatalf("ParseBandwidth(%q) = %d, out of range", s, b)
		}
		if back, err := ParseBandwidth(FormatBandwidth(b)); err != nil || back != b {
			t.Fatalf("ParseBandwidth(%q) = %d; FormatBandwidth %q reads back as %d, %v", s, b, FormatBandwidth(b), back, err)
		}
	})
}

package loader_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/setting"
)

// resolve parses args as a command's data flags and resolves them over
// the default pipeline.
func resolve(t *testing.T, args ...string) (loader.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d loader.DataFlags
	d.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return d.Resolve(context.Background(), loader.DefaultConfig())
}

// writePNG writes a small headspace dataset of PNGs and returns its
// directory.
func writePNG(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	src := datasets.Synthetic{Width: 16, Height: 16, Classes: 2, N: 6, Seed: 1}
	if _, err := ondisk.Write(context.Background(), dir, src, ondisk.WriteOptions{Format: "png", Layout: "files", Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestResolveOnce checks that --data is resolved once, by Resolve, and
// that the result file's settings and the report's line take its handle:
// with the manifest removed after Resolve, both are what they were, where
// a Config whose Data is set by hand (no handle) is described as
// unreadable.
func TestResolveOnce(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	ctx := context.Background()
	dir := writePNG(t)
	cfg, err := resolve(t, "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	settings, line := cfg.Settings(), loader.Describe(ctx, cfg)
	if want := "data " + dir + ": 6 png samples in files, "; !strings.HasPrefix(line, want) {
		t.Fatalf("Describe: %q, want it to start %q", line, want)
	}
	if err := os.Remove(filepath.Join(dir, ondisk.ManifestName)); err != nil {
		t.Fatal(err)
	}
	if got := loader.Describe(ctx, cfg); got != line {
		t.Fatalf("Describe after the manifest went: %q, want %q", got, line)
	}
	if got := cfg.Settings(); strings.Contains(joinSettings(got), "unreadable") || joinSettings(got) != joinSettings(settings) {
		t.Fatalf("settings after the manifest went:\n%s\nwant\n%s", joinSettings(got), joinSettings(settings))
	}
	byHand := loader.DefaultConfig()
	byHand.Data = dir
	if got := loader.Describe(ctx, byHand); got != "" {
		t.Fatalf("Describe of a Config without a handle: %q, want \"\" (inspected again, no dataset)", got)
	}
	if !strings.Contains(joinSettings(byHand.Settings()), "data-format=unreadable") {
		t.Fatalf("settings of a Config without a handle: %s, want data-format unreadable", joinSettings(byHand.Settings()))
	}
}

// TestResolveChecksTheHandle checks Resolve's refusals of the dataset's
// format, made from its handle: --decode-scale auto and --decoder nvjpeg
// need JPEGs.
func TestResolveChecksTheHandle(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := writePNG(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--decoder", "turbojpeg", "--decode-scale", "auto"}, "--decode-scale auto decodes JPEGs: --data " + dir + " holds png images"},
		{[]string{"--decoder", "nvjpeg"}, "--decoder nvjpeg decodes JPEGs: --data " + dir + " holds png"},
	} {
		_, err := resolve(t, append([]string{"--data", dir}, c.args...)...)
		var u cli.UsageError
		if !errors.As(err, &u) || u.Msg != c.want {
			t.Errorf("%v: %v, want the usage error %q", c.args, err, c.want)
		}
	}
}

// joinSettings is s as one line per setting, key=value.
func joinSettings(s []setting.Setting) string {
	var b strings.Builder
	for _, kv := range s {
		b.WriteString(kv.Key + "=" + kv.Value + "\n")
	}
	return b.String()
}

// FuzzParsePlacements feeds arbitrary text to --placement's parser: it
// may not panic, a failure is a one-line usage error, and what it
// accepts is a non-empty list of placements.
func FuzzParsePlacements(f *testing.F) {
	for _, s := range []string{"pageable", "pinned,device", "", ",", "x", "pinned,pinned"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := loader.ParsePlacements(s)
		if err != nil {
			var u cli.UsageError
			if !errors.As(err, &u) || strings.ContainsAny(u.Msg, "\n\r") {
				t.Fatalf("%q: %v is not a one-line usage error", s, err)
			}
			return
		}
		if len(ps) == 0 {
			t.Fatalf("ParsePlacements(%q) gave nothing", s)
		}
	})
}

package figures

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/internal/cli"
)

// proseDocs are the pages whose prose is scanned for figures: every
// figure found there must be recomputed by a case, labelled as unbacked,
// or be one of the page's listed settings (issue 41).
var proseDocs = []string{"docs/remote.md", "docs/gate.md", "docs/history.md", "docs/real-data.md", "docs/own-loop.md", "docs/node.md", "docs/gpu.md"}

// minFound is the fewest figures the scan must find on each page (about
// nine in ten of those it found when issue 41 added it), so that a scan
// that sees nothing cannot pass.
var minFound = map[string]int{
	"docs/remote.md": 85, "docs/gate.md": 85, "docs/history.md": 80, "docs/real-data.md": 65,
	"docs/own-loop.md": 64, "docs/node.md": 90, "docs/gpu.md": 105,
}

// unbackedLabel is the project's phrase for a figure no committed file
// holds (docs/reproduce.md): a figure in a paragraph, list item or table
// row that says it is labelled, and in the code and the table that such
// a paragraph introduces (ending in a colon).
const unbackedLabel = "no committed file"

// figureRe matches a figure's text: a number, with a unit of time,
// size, rate, money, a percentage or a ratio where it has one.
var figureRe = regexp.MustCompile(`\$?\d[\d,]*(?:\.\d+)?(?:%|×|\s?(?:samples/s|steps/s|MB/s|GB/s|Gbit/s|Mbit/s|ms|µs|ns|sec|s|minutes?|min|hours?|h|MiB|KiB|GiB|MB|KB|GB|kB)\b)?`)

// findFigures finds the figures in prose, as [start, end) offsets: a
// number with a decimal point, or a number with a unit. Bare integers
// (counts, issue numbers, sizes in pixels) are not figures here. A number
// glued to a letter or a dot (s16, go1.26, 3754cfa) or a version (2.1.5)
// is not one either.
func findFigures(text string) [][2]int {
	var out [][2]int
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	for _, m := range figureRe.FindAllStringIndex(text, -1) {
		lo, hi := m[0], m[1]
		if lo > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:lo])
			if isWord(r) || strings.ContainsRune("._/-", r) {
				continue
			}
		}
		if hi < len(text) {
			r, _ := utf8.DecodeRuneInString(text[hi:])
			if isWord(r) || r == '.' && hi+1 < len(text) && text[hi+1] >= '0' && text[hi+1] <= '9' {
				continue
			}
		}
		fig := text[lo:hi]
		hasUnit := strings.TrimLeft(fig, "$0123456789,.") != ""
		if !hasUnit && !strings.Contains(fig, ".") {
			continue
		}
		out = append(out, [2]int{lo, hi})
	}
	// Bare counts: "4 of 15", "eight of its forty" (issue 52).
	for _, m := range countRe.FindAllStringIndex(text, -1) {
		lo, hi := m[0], m[1]
		if lo > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:lo])
			if isWord(r) || strings.ContainsRune("._/-", r) {
				continue
			}
		}
		if hi < len(text) {
			if r, _ := utf8.DecodeRuneInString(text[hi:]); isWord(r) {
				continue
			}
		}
		out = append(out, [2]int{lo, hi})
	}
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	return out
}

// countWords are the numbers the pages spell out in counts.
const countWords = `one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred`

// countRe matches a bare count, "N of M": a number (in digits or a word)
// of another, with the, its or their between ("eight of its forty").
var countRe = regexp.MustCompile(`(?i)(?:\d+(?:,\d{3})*|` + countWords + `)\s+of\s+(?:(?:the|its|their|all)\s+)?(?:\d+(?:,\d{3})*|` + countWords + `)`)

// A setting is a piece of a page's text whose figures are not
// measurements: a default, a preset, a parameter of a run, a quoted
// source, arithmetic on other figures of the page. why says which.
type setting struct {
	doc, text, why string
}

// A quote is a piece of a page's text whose figures are copied from
// committed files: a generated report that a test rebuilds from its result
// file (notebooks/remote-remedies.md), or a file a command wrote beside its
// results (a session's gate.txt). Each figure of the text must occur, as
// the same number, in one of the files.
type quote struct {
	doc, text string
	files     []string
}

// numberRe is the number of a figure, without its sign, currency or unit.
var numberRe = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)

// holdsNumber says whether text holds the number n as a number (not as
// a part of a longer one): the same value, or, where n has decimals, a
// value with more decimals that rounds to it.
func holdsNumber(text, n string) bool {
	n = strings.ReplaceAll(n, ",", "")
	want, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return false
	}
	decimals := 0
	if i := strings.IndexByte(n, '.'); i >= 0 {
		decimals = len(n) - i - 1
	}
	for _, m := range numberRe.FindAllStringIndex(text, -1) {
		if m[0] > 0 && text[m[0]-1] == '.' {
			continue
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(text[m[0]:m[1]], ",", ""), 64)
		if err != nil {
			continue
		}
		if v == want || decimals > 0 && strconv.FormatFloat(v, 'f', decimals, 64) == n {
			return true
		}
	}
	return false
}

// unitQuotes are quotes whose files hold their figures in another unit
// of the same kind: nanoseconds written as ms or s, a fraction as a
// percentage (holdsScaled).
var unitQuotes []quote

// fileNumberRe is a number as a result file writes it, with an exponent
// where it has one (3.62430577e+08).
var fileNumberRe = regexp.MustCompile(`\d+(?:\.\d+)?(?:[eE][-+]?\d+)?`)

// unitScales are the conversions holdsScaled tries: ns to µs, ms and s,
// a fraction to a percentage.
var unitScales = []float64{1e-3, 1e-6, 1e-9, 100}

// holdsScaled says whether text holds a number that, converted by one of
// unitScales, is n as the page rounds it (to its decimals).
func holdsScaled(text, n string) bool {
	n = strings.ReplaceAll(n, ",", "")
	decimals := 0
	if i := strings.IndexByte(n, '.'); i >= 0 {
		decimals = len(n) - i - 1
	}
	for _, m := range fileNumberRe.FindAllString(text, -1) {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			continue
		}
		for _, k := range unitScales {
			if strconv.FormatFloat(v*k, 'f', decimals, 64) == n {
				return true
			}
		}
	}
	return false
}

// A settingFigure is a figure that is a setting wherever a page writes
// it: an injected slowdown, a threshold, an interval's level.
type settingFigure struct {
	doc, figure, why string
}

// A pendingTable is a table of a page (named by the start of its header
// row) whose every row is to be regenerated from a command's output by
// other work; its figures are not checked here until then.
type pendingTable struct {
	doc, header, why string
}

// A block is a paragraph, a list item, a table row, a heading or a
// fenced code block of a page, normalized; start is its offset in the
// page's normalized text (the blocks joined by single spaces).
type block struct {
	text  string
	start int
	code  bool
}

// blocks splits a Markdown page into its blocks.
func blocks(page string) []block {
	var bs []block
	var cur []string
	code := false
	flush := func(isCode bool) {
		indented := len(cur) > 0
		for _, l := range cur {
			indented = indented && (strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t"))
		}
		isCode = isCode || indented
		t := normalize(strings.Join(cur, "\n"))
		cur = nil
		if t == "" {
			return
		}
		bs = append(bs, block{text: t, code: isCode})
	}
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !code {
				flush(false)
				cur = append(cur, line)
				code = true
			} else {
				cur = append(cur, line)
				flush(true)
				code = false
			}
			continue
		}
		if code {
			cur = append(cur, line)
			continue
		}
		switch {
		case trimmed == "":
			flush(false)
			continue
		case strings.HasPrefix(trimmed, "- "), strings.HasPrefix(trimmed, "* "),
			strings.HasPrefix(trimmed, "|"), strings.HasPrefix(trimmed, "#"),
			regexp.MustCompile(`^\d+\. `).MatchString(trimmed):
			flush(false)
		}
		cur = append(cur, line)
	}
	flush(code)
	off := 0
	for i := range bs {
		bs[i].start = off
		off += len(bs[i].text) + 1
	}
	return bs
}

// joined is the page's normalized text as the blocks give it.
func joined(bs []block) string {
	ts := make([]string, len(bs))
	for i, b := range bs {
		ts[i] = b.text
	}
	return strings.Join(ts, " ")
}

// masked blanks a block's inline code and link targets, where a number is
// a name, a flag or a path, not a figure.
func masked(s string) string {
	b := []byte(s)
	blank := func(re *regexp.Regexp) {
		for _, m := range re.FindAllIndex(b, -1) {
			for i := m[0]; i < m[1]; i++ {
				b[i] = ' '
			}
		}
	}
	blank(regexp.MustCompile("`[^`]*`"))
	blank(regexp.MustCompile(`\]\([^)]*\)`))
	return string(b)
}

// sentenceAt is the sentence of s around offset i: from the end of the
// previous sentence (". " followed by a capital, an opening or a mark)
// to the end of this one.
func sentenceAt(s string, i int) string {
	isEnd := func(j int) bool {
		if j+2 >= len(s) || s[j] != '.' || s[j+1] != ' ' {
			return false
		}
		c := s[j+2]
		return c >= 'A' && c <= 'Z' || strings.ContainsRune("(*`|[", rune(c))
	}
	lo := 0
	for j := i; j >= 0; j-- {
		if isEnd(j) {
			lo = j + 2
			break
		}
	}
	hi := len(s)
	for j := i; j < len(s); j++ {
		if isEnd(j) {
			hi = j + 1
			break
		}
	}
	return s[lo:hi]
}

// span is a range of a page's normalized text.
type span struct{ lo, hi int }

// spansOf are every place text occurs in page.
func spansOf(page, text string) []span {
	var ss []span
	for from := 0; ; {
		i := strings.Index(page[from:], text)
		if i < 0 {
			return ss
		}
		ss = append(ss, span{from + i, from + i + len(text)})
		from += i + 1
	}
}

func within(ss []span, lo, hi int) bool {
	for _, s := range ss {
		if lo >= s.lo && hi <= s.hi {
			return true
		}
	}
	return false
}

// remedies is the report of the bucket remedies' run, rebuilt from
// notebooks/results/remote-remedies.txt by TestRemoteReportRebuilds.
const remedies = "notebooks/remote-remedies.md"

// Files the history page's quotes come from.
const (
	yearBefore = "results/history-year-before.txt"
	pageFile   = "results/history-page.txt"
)

// A loose figure is one the scan found that nothing accounts for.
type loose struct {
	figure, sentence string
}

// looseFigures scans doc's prose and returns the figures that no case
// recomputes, no label marks and no setting lists; it fails the test for
// a setting the page no longer holds.
func looseFigures(t *testing.T, doc string) (out []loose, found int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	bs := blocks(string(data))
	page := joined(bs)
	var covered []span
	for _, c := range allCases() {
		if c.doc != doc {
			continue
		}
		args := make([]any, len(c.figs))
		for i, f := range c.figs {
			args[i] = fmt.Sprintf(f.format, f.f(t))
		}
		covered = append(covered, spansOf(page, normalize(fmt.Sprintf(c.text, args...)))...)
	}
	for _, s := range settings {
		if s.doc != doc {
			continue
		}
		ss := spansOf(page, normalize(s.text))
		if len(ss) == 0 {
			t.Errorf("%s: the setting %q (%s) is not on the page any more: take it off the list", doc, s.text, s.why)
		}
		covered = append(covered, ss...)
	}
	type quoted struct {
		quote
		scaled bool
	}
	var qs []quoted
	for _, q := range quotes {
		qs = append(qs, quoted{q, false})
	}
	for _, q := range unitQuotes {
		qs = append(qs, quoted{q, true})
	}
	for _, q := range qs {
		if q.doc != doc {
			continue
		}
		text := normalize(q.text)
		ss := spansOf(page, text)
		if len(ss) == 0 {
			t.Errorf("%s: the quote %q is not on the page any more: take it off the list", doc, q.text)
			continue
		}
		var held []string
		for _, f := range q.files {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, string(data))
		}
		mt := masked(text)
		for _, m := range findFigures(mt) {
			for _, n := range numberRe.FindAllString(mt[m[0]:m[1]], -1) {
				found := false
				for _, h := range held {
					found = found || holdsNumber(h, n) || q.scaled && holdsScaled(h, n)
				}
				if !found {
					t.Errorf("%s: %q quotes %s, which none of %v holds", doc, q.text, n, q.files)
				}
			}
		}
		covered = append(covered, ss...)
	}
	pending := map[int]bool{}
	for _, p := range pendingTables {
		if p.doc != doc {
			continue
		}
		found := false
		for i, b := range bs {
			if !strings.HasPrefix(b.text, normalize(p.header)) {
				continue
			}
			found = true
			for j := i; j < len(bs) && strings.HasPrefix(bs[j].text, "|"); j++ {
				pending[j] = true
			}
		}
		if !found {
			t.Errorf("%s: the pending table %q is not on the page any more: take it off the list", doc, p.header)
		}
	}
	isSetting := map[string]bool{}
	for _, f := range settingFigures {
		if f.doc == doc {
			isSetting[f.figure] = true
		}
	}
	// A labelled paragraph that ends in a colon labels the code and the
	// table it introduces.
	labelled := map[int]bool{}
	for i, b := range bs {
		if !strings.Contains(b.text, unbackedLabel) {
			continue
		}
		labelled[i] = true
		if !strings.HasSuffix(b.text, ":") {
			continue
		}
		for j := i + 1; j < len(bs) && (bs[j].code || strings.HasPrefix(bs[j].text, "|")); j++ {
			labelled[j] = true
		}
	}
	held := map[int]bool{}
	for _, h := range heldBlocks {
		if h.doc != doc {
			continue
		}
		n := 0
		for i, b := range bs {
			if b.code && strings.HasPrefix(strings.TrimPrefix(b.text, "``` "), normalize(h.start)) {
				held[i] = true
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: the held block %q is not on the page any more: take it off the list", doc, h.start)
		}
	}
	for _, r := range rebuiltBlocks {
		if r.doc != doc {
			continue
		}
		i := slices.IndexFunc(bs, func(b block) bool {
			return b.code && strings.HasPrefix(strings.TrimPrefix(b.text, "``` "), normalize(r.start))
		})
		if i < 0 {
			t.Errorf("%s: the rebuilt block %q is not on the page any more: take it off the list", doc, r.start)
			continue
		}
		held[i] = true
		want := strings.TrimSpace(strings.Trim(bs[i].text, "`"))
		if got := rebuild(t, r.args); !strings.Contains(got, want) {
			t.Errorf("%s: the block %q is not what headspace %s prints:\n  page: %q\n  command: %q", doc, r.start, strings.Join(r.args, " "), want, got)
		}
	}
	for i, b := range bs {
		if pending[i] || labelled[i] || held[i] {
			continue
		}
		text := masked(b.text)
		if b.code {
			// An output block (a fence with no language) of a page whose
			// output blocks are scanned; commands, indented or "```sh",
			// are not.
			if !outputDocs[doc] || !strings.HasPrefix(b.text, "``` ") {
				continue
			}
			text = strings.Repeat(" ", 4) + strings.TrimSuffix(b.text[4:], "```") + "   "
		}
		for _, m := range findFigures(text) {
			found++
			lo, hi := m[0], m[1]
			fig := text[lo:hi]
			if isSetting[strings.TrimLeft(fig, "+-")] {
				continue
			}
			if within(covered, b.start+lo, b.start+lo+len(fig)) {
				continue
			}
			sent := sentenceAt(b.text, lo)
			out = append(out, loose{fig, sent})
		}
	}
	return out, found
}

// TestProseFiguresAreBackedOrLabelled scans the prose of proseDocs for
// figures: each must be recomputed from a committed file by a case of
// TestDocsFiguresMatchTheirFiles, stand in a sentence labelled "no
// committed file", or lie in a listed setting (not a measurement).
func TestProseFiguresAreBackedOrLabelled(t *testing.T) {
	for _, doc := range proseDocs {
		ls, found := looseFigures(t, doc)
		t.Logf("%s: %d figures found", doc, found)
		if found < minFound[doc] {
			t.Errorf("%s: %d figures found, want at least %d: the scan has stopped seeing them", doc, found, minFound[doc])
		}
		for _, l := range ls {
			t.Errorf("%s: %q is neither recomputed from a file nor labelled %q:\n  %s", doc, l.figure, unbackedLabel, l.sentence)
		}
	}
}

// outputDocs are the scanned pages whose output blocks (a command's
// report quoted in a fence with no language) are scanned too (issue 52).
var outputDocs = map[string]bool{"docs/own-loop.md": true, "docs/node.md": true, "docs/gpu.md": true}

// A heldBlock is an output block (named by the start of its text) whose
// every figure another test holds to the committed files.
type heldBlock struct {
	doc, start, why string
}

// A rebuiltBlock is an output block that quotes a command's report rebuilt
// from committed files (--from): the block must be a part of what the
// command prints now, run here.
type rebuiltBlock struct {
	doc, start string
	args       []string // headspace's arguments; paths from the root
}

// rebuild runs headspace args in this process (the command as
// the command layer makes it), with the paths taken from the root, and
// returns its output normalized.
func rebuild(t *testing.T, args []string) string {
	t.Helper()
	var c *cli.Command
	for _, cmd := range command.Commands() {
		if cmd.Name == args[0] {
			c = &cmd
		}
	}
	if c == nil {
		t.Fatalf("headspace has no command %s", args[0])
	}
	rest := slices.Clone(args[1:])
	for i, a := range rest {
		if strings.HasPrefix(a, "results/") {
			rest[i] = filepath.Join(root, filepath.FromSlash(a))
		}
	}
	var out, errs strings.Builder
	if err := c.Run(context.Background(), rest, &out, &errs); err != nil {
		t.Fatalf("headspace %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	return normalize(out.String())
}

// heldBlocks are the output blocks other tests hold.
var heldBlocks = []heldBlock{
	{"docs/gpu.md", "goal figure target verdict anchor file nvJPEG batched decode, 1024² natural JPEGs 10792", "TestGoalsH200 (workloads): headspace cuda goals of results/gpu/nvidia-h200-3fcbbc1"},
	{"docs/gpu.md", "goal figure target verdict anchor file nvJPEG batched decode, 1024² natural JPEGs 10801", "TestGoalsH200 (workloads): headspace cuda goals of results/gpu/nvidia-h200-a11143c"},
}

// rebuiltBlocks are the output blocks a command rebuilds from a file.
var rebuiltBlocks = []rebuiltBlock{
	{"docs/node.md", "node-max-accelerators: 4", []string{"node", "--from", nodeFile}},
}

// settings are the pieces of the scanned pages whose figures are not
// measurements.
var settings = []setting{
	// docs/remote.md
	{"docs/remote.md", "exit 2 within 10 s (`bucket.OpenTimeout`)", "a bound in the code"},
	{"docs/remote.md", "(DLIO's 50 million objects took over 12 hours)", "a quoted source (DLIO's paper)"},
	{"docs/remote.md", "(in 256 KiB blocks), each image's first 64 KiB", "read sizes in the code"},
	{"docs/remote.md", "(default 8 MiB)", "a flag's default"},
	{"docs/remote.md", "an image over 256 MiB", "a bound in the code (ondisk.MaxSampleBytes)"},
	{"docs/remote.md", "a deadline (60 s, MosaicML Streaming's)", "a setting, Streaming's default"},
	{"docs/remote.md", "stalls 3% past the request deadline", "a test's fault rates"},
	{"docs/remote.md", "batches of 256 at the document's 290 ms step, 16 GETs in flight over the `cross-region` link (30 ms ± 5)", "the run's settings"},
	{"docs/remote.md", "for a 30 ms round trip", "the link's setting"},
	{"docs/remote.md", "| `same-region` | 1 ms ± 0.2 | 10 Gbit/s | 90 MB/s | 5,500 |", "a preset of package link"},
	{"docs/remote.md", "| `cross-region` | 30 ms ± 5 | 1 Gbit/s | 90 MB/s | 5,500 |", "a preset of package link"},
	{"docs/remote.md", "| `home` | 20 ms ± 5 | 100 Mbit/s | 90 MB/s | 5,500 |", "a preset of package link"},
	{"docs/remote.md", "AWS's usual 85–90 MB/s per request", "a quoted source (AWS)"},
	{"docs/remote.md", "in ~4 MB and ~64 MB shards", "the experiment's settings"},
	{"docs/remote.md", "round trip 0, 5, 20 and 80 ms", "the experiment's settings"},
	{"docs/remote.md", "an emulated 10 ms step", "the experiment's settings"},
	{"docs/remote.md", "here a ~64 MB shard holds", "the experiment's settings"},

	// docs/gate.md
	{"docs/gate.md", "adjusted by Benjamini–Hochberg so the false discovery rate stays at `--alpha` (0.05), and, with `--history DIR`, a change also beyond 3× the metric's spread", "defaults of compare"},
	{"docs/gate.md", "(the U test cannot reach p < 0.05 with fewer than 4 per side)", "a property of the U test"},
	{"docs/gate.md", "`--min-coverage` (90%)", "a flag's default"},
	{"docs/gate.md", "(10 s; default `$HEADSPACE_QUIET_WAIT`; `0` skips) for the machine's CPU pressure over a second to fall below 10%", "a flag's default and a bound in the code"},
	{"docs/gate.md", "base's median `cpu-ns/op` ≥ 0.5 × base's least `ns/op`", "the rule's constant"},
	{"docs/gate.md", "killed 1 s later if still running", "a bound in the code"},
	{"docs/gate.md", "a chance of 8% at each run to open one lasting 1–3 runs) in which the CPU-bound point's wall time is 25% longer", "the simulation model's parameters"},
	{"docs/gate.md", "(CPU 90% of wall)", "the simulation model's parameters"},
	{"docs/gate.md", "the interval's lower end is 36%;", "the rates table's 35.9%, rounded"},
	{"docs/gate.md", "is 5% to 23% wide here", "the widths of the two intervals quoted beside them"},
	// docs/real-data.md
	{"docs/real-data.md", "the files are 8× larger than a photograph's", "arithmetic on the sizes table (940 423 ÷ 113 628 bytes)"},
	{"docs/real-data.md", "(2% of the pixels show the background)", "the model's property: e^-4 of the image is uncovered"},
	{"docs/real-data.md", "Natural content is 5× smaller than noise as JPEG at 1024² and 1.7× larger than the photo", "arithmetic on the sizes table"},
	{"docs/real-data.md", "to at most 15% of the raw bytes", "the tests' bound"},
	{"docs/real-data.md", "the entropy decoding of a 190 KB file", "the sizes table's 189 581 bytes"},
	{"docs/real-data.md", "290 ms × 16/256 ≈ 18 ms", "the emulated step, arithmetic"},
	{"docs/real-data.md", "each full decode writes a 3 MB raw buffer from the pool, cold in cache, against 192 KB at 1/4", "arithmetic: 1024² and 256² × 3 bytes"},
	{"docs/real-data.md", "decoding costing over 90% at `none`", "the earlier report's conclusion, quoted as history"},

	// docs/history.md
	{"docs/history.md", "with the median, its 95% band", "a confidence level"},
	{"docs/history.md", "more than 10 minutes past now", "a bound in the code"},
	{"docs/history.md", "(significant below 0.001;", "the test's level"},
	{"docs/history.md", "an 8% step under 2% Gaussian noise, 30 points,", "a test's input"},
	{"docs/history.md", "0 of 1000 flat 30-point series at 2% noise raise a change (`TestFalseAlarmRate`; at the first setting tried, alpha 0.01,", "a test's input and a setting"},
	{"docs/history.md", "At alpha 0.001 a change can be confirmed only where 2/C(n,k) < 0.001", "the test's level"},
	{"docs/history.md", "(`TestMinimumIsTrue`: a 50% drop", "a test's input"},
	{"docs/history.md", "a 50% drop was never found", "a test's input"},
	{"docs/history.md", "with probability 2/C(n,k) < 0.05, and the step between medians exceeds 3 × the spread (1.4826 × MAD)", "the rule's constants (1.4826: MAD to σ of a normal)"},
	{"docs/history.md", "A 50% drop in the last 3 of 20 runs, or half way through 12, is a suspected step (`TestSuspectAtEnd`); 8 of 1000 flat 20-point series at 2% noise", "a test's input and its count"},
	{"docs/history.md", "6 samples each, ±2% noise, three 8% regressions", "the generator's settings"},
	{"docs/history.md", "6 samples, ±2% noise, three 8% steps", "the generator's settings"},
	{"docs/history.md", "(the square would be 4×)", "arithmetic: 730/365 squared"},
	{"docs/history.md", "±10% uniform noise, two draws of one distribution: 50 metrics with raw p < 0.05 beyond the 5% threshold", "a deterministic test's input and its count"},
	{"docs/history.md", "20 of 2000 benchmarks 12% slower at ±4% noise", "a test's input"},
	{"docs/history.md", "2/C(2n, n) (0.029 at 4, 0.0022 at 6, 0.00016 at 8)", "arithmetic: 2/C(8,4), 2/C(12,6), 2/C(16,8)"},
	{"docs/history.md", "1.4826 × the median absolute deviation", "the rule's constant"},
	{"docs/history.md", "the median and its 95% interval of package summary", "a confidence level"},
	{"docs/history.md", "the 5% threshold, a run condition", "the gate's default"},
	{"docs/history.md", "the median, its 95% confidence band", "a confidence level"},
	{"docs/history.md", "(first screen under 0.5 s, visible charts under 1 s)", "issue 37's goals"},
	{"docs/history.md", "took over 1 s in one run", "issue 37's goal"},
	{"docs/history.md", "**uPlot 1.6.32**", "a version"},
	{"docs/history.md", "Chart.js is 4× the size", "a quoted source (the libraries' published bundle sizes)"},
	{"docs/gate.md", "The ≤ 2% target is", "the target"},
	{"docs/gate.md", "would bound it below 2%", "the target"},
	{"docs/gate.md", "The ≥ 90% target is", "the target"},
	{"docs/gate.md", "36 of 36 would show ≥ 90%", "the target"},
	{"docs/gate.md", "so above 100% when several wait at once", "a bound of the unit"},
	{"docs/gate.md", "(15 of 32 rounds over the 5% run-queue delay)", "the --max-run-delay default"},
}

// settingFigures are figures that are settings wherever their page
// writes them.
var settingFigures = []settingFigure{
	{"docs/gate.md", "10%", "the injected slowdown (HEADSPACE_INJECT=raw=0.10), a target's or a default's size"},
	{"docs/gate.md", "5%", "the injected slowdown, the default --threshold or --max-run-delay, the model's σ"},
	{"docs/gate.md", "3%", "the paired gate's default --threshold, the model's σ"},
	{"docs/gate.md", "95%", "a confidence level"},
	{"docs/gate.md", "97.5%", "a confidence level (95% over two verdict metrics, Bonferroni)"},
	{"docs/gate.md", "0.025", "the tail of a 95% interval"},
}

// pendingTables are tables whose rows are not checked here: the
// sessions' table, which issue 41 item 7 left as it was, and the
// simulation's table, which TestPairedMethod (harness/gate)
// writes and holds to its own output. (The canaries' rates are a code
// block, which TestDocsCanaries holds to the command's output.)
var pendingTables = []pendingTable{
	{"docs/gate.md", "| test | sessions | passed | failed | not sure: rerun |", "generated by TestPairedMethod, which fails when the table is not its output"},
	{"docs/gate.md", "| session | slowdown | disturbance |", "issue 41 item 7: the sessions' rows, from their files"},
}

// quotes are the pieces of the scanned pages copied from committed files.
var quotes = []quote{
	// docs/remote.md: the remedies, from their report.
	{"docs/remote.md", "The device ran 1596 samples/s.", []string{remedies}},
	{"docs/remote.md", "16 at 5 ms, and 64 at 20 and 80 ms; at 80 ms, 64 in flight gave 331 samples/s (headspace 79%), and at 20 ms 878 (45%).", []string{remedies}},
	{"docs/remote.md", "and at 80 ms 64 fetchers gave 331 samples/s against 16's 190", []string{remedies}},
	{"docs/remote.md", "was 0.78 (4 MB) and 0.79 (64 MB) for raw pixels, 0.89 and 0.85 for JPEG.", []string{remedies}},
	{"docs/remote.md", "(1586 samples/s or more) at every point of the grid but the four of raw 4 MB shards at 80 ms (1366–1397 samples/s, headspace 12–14%): median ratio over files 2.69 (raw) and 2.94–2.95 (JPEG).", []string{remedies}},
	{"docs/remote.md", "gave a median 0.96 of raw's samples/s over files and 1.00–1.01 over shards", []string{remedies}},
	{"docs/remote.md", "median absolute percentage error **5.2%** over all 140 predicted points (85 within 10%), but **14.5%** over the 84", []string{remedies}},
	{"docs/remote.md", "(median 0.1%). By round trip: 11.2% at 5 ms, 7.7% at 20 ms, 2.6% at 80 ms; the checks off the grid: 6.4% (40 ms over a 20 Mbit/s link, 16 in flight) and 16.1% (10 ms ± 2, 8 in flight).", []string{remedies}},
	{"docs/remote.md", "Where it misses: at 5 ms the measured request latency exceeds the round trip plus the calibrated server time (8.46 ms against 5 ms plus 1.32 ms for raw files at 1 in flight", []string{remedies}},
	{"docs/remote.md", "and at 20 ms with 64 in flight", []string{remedies}},
	{"docs/remote.md", "(a 31.68 ms request where 20 ms plus 1.32 ms is predicted: raw files 878 samples/s against 1501). The 10% goal", []string{remedies}},
	{"docs/remote.md", "(the 20 ms, 64-in-flight misses)", []string{remedies}},

	// docs/real-data.md: the decode file's note, the 003 report.
	{"docs/real-data.md", "load average 8.7 to 10.5", []string{"results/decode-scale-decode.txt"}},
	{"docs/real-data.md", "| noise | go | 0.23 | 0.70 |", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "| noise | turbojpeg | 0.72 | – |", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "| natural | go | 0.59 | 0.25 |", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "| natural | turbojpeg | **1.00** | – |", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "At 256² every case is at 0.99–1.00", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "smaller raw images 1024² → 256² 1.86×, libjpeg-turbo 1.53×, shards 1.01×, a warm page cache 1.03×; raw → JPEG with noise and Go's decoder 0.47×", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "(`none` at 1.00 of `device`, 4.24× the noise-and-Go steps/s)", []string{"notebooks/003-caching-ladder.md"}},
	{"docs/real-data.md", "Natural PNG goes the other way (0.25 against noise's 0.70;", []string{"notebooks/003-caching-ladder.md"}},

	// docs/history.md
	{"docs/history.md", "the old change points ran once each, 17 minutes)", []string{yearBefore}},
	{"docs/history.md", "under a load average of 5.5 to 7.7 (9 to 19 for the first page's)", []string{pageFile}},

	// docs/gate.md: the paired sessions' reports.
	{"docs/gate.md", "+10% asked reads +7.8% to +12.6% in the median per-round ratio, +5% reads +5.5% to +6.8%", sessionReports()},
	{"docs/gate.md", "every A/A interval of raw lies within [0.92, 1.15]", sessionReports()},
	{"docs/gate.md", "raw's CPU time read 1.078 [0.962, 1.147], \"not sure\", while its wall time read +9.9% [1.066, 1.111], \"slower\"", []string{"results/paired-aa-r2/s16/gate.txt"}},
	{"docs/gate.md", "(1.056, 1.055, 1.068, 1.065, their intervals' lower ends 0.969–0.976)", sessionReports()},
	{"docs/gate.md", "from s13's [0.970, 1.024] to s14's [0.920, 1.147])", []string{"results/paired-aa-r2/s13/gate.txt", "results/paired-aa-r2/s14/gate.txt"}},
	{"docs/gate.md", "while its CPU time read +11.0% [1.065, 1.163]", []string{"results/paired-aa-r2/s3/gate-replay.txt"}},
	{"docs/gate.md", "s16 now reads its wall time +9.91% [1.044, 1.112] over its 17", []string{"results/paired-aa-r2/s16/gate-replay-r4.txt"}},
	{"docs/gate.md", "reads +5.47% [1.046, 1.117]", []string{"results/paired-aa-r2/s11/gate-replay-r4.txt"}},
	{"docs/gate.md", "it failed 0 (0.0%) of the A/A, 200 of the\n+10% and 193 (96.5%) of the +5% ones", []string{"results/gate-sim-before-r4.txt"}},
	{"docs/gate.md", "ran the same simulated sessions to 998\npasses, 2 failures and no rerun of the A/A ones, 200 failures of the +10%,\nand at +5% **8 passes** of a real slowdown beside 192 failures", []string{"results/gate-sim-before-r5.txt"}},
	{"docs/gate.md", "(s13's raw reads [0.947, 1.024], not slower)", []string{"results/paired-aa-r2/s13/gate-replay-r5.txt"}},
	{"docs/gate.md", "load average 9.47\n  to 13.74", []string{"results/paired-aa-r5/sessions.tsv"}},
	{"docs/gate.md", "1.006 [0.988, 1.025] (A/A), 1.081 [1.034, 1.115]", []string{"results/paired-aa-r5/s1/gate.txt", "results/paired-aa-r5/s4/gate.txt", "results/paired-aa-r5/s5/gate.txt"}},
	{"docs/gate.md", "1.057 [1.008, 1.087]", []string{"results/paired-aa-r5/s5/gate.txt"}},
}

// sessionReports are the gate's reports of the sixteen paired sessions
// (results/paired-aa-r2), s3's replay among them.
func sessionReports() []string {
	fs := []string{"results/paired-aa-r2/s3/gate-replay.txt"}
	for s := 1; s <= 16; s++ {
		fs = append(fs, fmt.Sprintf("results/paired-aa-r2/s%d/gate.txt", s))
	}
	return fs
}

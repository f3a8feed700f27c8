package main

import (
	"os"
	"strings"
	"testing"
)

// TestDocsCanaries: docs/gate.md's rates of every canary ever run are
// the output of the command it names, on the committed files (issue 41:
// the doc's tables were hand-kept and went stale). Set
// HEADSPACE_UPDATE_DOCS=1 to rewrite the block.
func TestDocsCanaries(t *testing.T) {
	const doc = "../../docs/gate.md"
	const begin, end = "<!-- canaries: headspace gate --canaries results/store results/paired-aa results/paired-aa-r2 -->\n", "<!-- /canaries -->"
	code, stdout, stderr := runCLI("gate", "--canaries", "../../results/store", "../../results/paired-aa", "../../results/paired-aa-r2")
	if code != 0 {
		t.Fatalf("gate --canaries: exit %d: %s", code, stderr)
	}
	want := "```\n" + stdout + "```\n"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s holds no %q … %q block", doc, strings.TrimSpace(begin), end)
	}
	if got := text[i+len(begin) : j]; got != want {
		if os.Getenv("HEADSPACE_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(doc, []byte(text[:i+len(begin)]+want+text[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/gate.md's canary rates are not the command's output (HEADSPACE_UPDATE_DOCS=1 go test -run TestDocsCanaries ./cmd/headspace):\n%s\nwant:\n%s", got, want)
	}
}

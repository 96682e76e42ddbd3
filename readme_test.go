package converge_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// verbatimMarker precedes a README code block that must appear, line for
// line, in the file it names (relative to the repository root).
const verbatimMarker = "<!-- verbatim: "

// snippet is a README code block held to a file.
type snippet struct {
	file  string
	line  int // of the marker in the README
	lines []string
}

// readmeSnippets returns the code blocks of the document doc, whose text is
// readme, that follow a verbatim marker.
func readmeSnippets(t *testing.T, doc, readme string) []snippet {
	t.Helper()
	var out []snippet
	var cur *snippet
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, verbatimMarker):
			cur = &snippet{file: strings.TrimSuffix(strings.TrimPrefix(line, verbatimMarker), " -->"), line: n}
		case cur != nil && !inBlock:
			require.True(t, strings.HasPrefix(line, "```"), "%s:%d: a verbatim marker is followed by a code block", doc, cur.line)
			inBlock = true
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur, inBlock = nil, false
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a verbatim block is not closed", doc)
	return out
}

// containsVerbatim reports whether want appears in lines as consecutive
// lines, all indented by the same number of extra tabs.
func containsVerbatim(lines, want []string) bool {
	if len(want) == 0 {
		return false
	}
	for i := range lines {
		indent, ok := strings.CutSuffix(lines[i], want[0])
		if !ok || strings.Trim(indent, "\t") != "" || i+len(want) > len(lines) {
			continue
		}
		match := true
		for j, w := range want {
			if got := lines[i+j]; got != indent+w && !(w == "" && got == "") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// The README's adoption snippets, and the code blocks of CONTRIBUTING.md
// and docs/, are the tested code they say they are: each block after a
// verbatim marker appears line for line in the file named.
func TestREADMESnippetsAreTestedCode(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	for _, doc := range append([]string{"README.md", "CONTRIBUTING.md"}, docs...) {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		snippets := readmeSnippets(t, doc, string(text))
		if doc == "README.md" {
			require.GreaterOrEqual(t, len(snippets), 2, "a client-go snippet and the controller-runtime registration")
		}
		for _, s := range snippets {
			src, err := os.ReadFile(s.file)
			require.NoError(t, err, "%s:%d names %s", doc, s.line, s.file)
			assert.True(t, containsVerbatim(strings.Split(string(src), "\n"), s.lines),
				"%s:%d: the block is not in %s as it is", doc, s.line, s.file)
		}
	}
}

// A newcomer reads the README in ten minutes: at most 300 lines, and each
// client-go adoption snippet (cut from kube/) at most 40.
func TestREADMEIsShort(t *testing.T) {
	text, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.LessOrEqual(t, strings.Count(string(text), "\n"), 300, "README.md lines")
	for _, s := range readmeSnippets(t, "README.md", string(text)) {
		if strings.HasPrefix(s.file, "kube/") {
			assert.LessOrEqual(t, len(s.lines), 40, "README.md:%d: the snippet from %s", s.line, s.file)
		}
	}
}

func TestContainsVerbatim(t *testing.T) {
	file := []string{"func f() {", "\tif x {", "\t\ty()", "", "\t}", "}"}
	tests := []struct {
		name string
		want []string
		ok   bool
	}{
		{name: "the whole file", want: file, ok: true},
		{name: "an indented part, dedented", want: []string{"if x {", "\ty()", "", "}"}, ok: true},
		{name: "a changed line", want: []string{"if x {", "\tz()"}, ok: false},
		{name: "lines out of order", want: []string{"\ty()", "if x {"}, ok: false},
		{name: "indentation that differs between lines", want: []string{"if x {", "y()"}, ok: false},
		{name: "nothing", want: nil, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.ok, containsVerbatim(file, tt.want))
		})
	}
}

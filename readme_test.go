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

// verbatimMarker precedes a code block of the README or of a page of docs/
// that must appear, line for line, in the file it names (relative to the
// repository root).
const verbatimMarker = "<!-- verbatim: "

// snippet is a code block of a document held to a file.
type snippet struct {
	file  string
	line  int // of the marker in the document
	lines []string
}

// docSnippets returns the code blocks of the document doc, named name, that
// follow a verbatim marker.
func docSnippets(t *testing.T, name, doc string) []snippet {
	t.Helper()
	var out []snippet
	var cur *snippet
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, verbatimMarker):
			cur = &snippet{file: strings.TrimSuffix(strings.TrimPrefix(line, verbatimMarker), " -->"), line: n}
		case cur != nil && !inBlock:
			require.True(t, strings.HasPrefix(line, "```"), "%s:%d: a verbatim marker is followed by a code block", name, cur.line)
			inBlock = true
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur, inBlock = nil, false
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a verbatim block is not closed", name)
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

// The README's adoption snippets are the tested code they say they are: each
// block after a verbatim marker appears line for line in the file named.
func TestREADMESnippetsAreTestedCode(t *testing.T) {
	snippets := requireSnippetsAreTestedCode(t, "README.md")
	require.GreaterOrEqual(t, len(snippets), 6, "a client-go and a controller-runtime snippet per engine")
}

// So are the snippets of every page of docs/.
func TestDocsSnippetsAreTestedCode(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	held := 0
	for _, page := range pages {
		held += len(requireSnippetsAreTestedCode(t, page))
	}
	require.Positive(t, held, "docs/testenv.md holds its test of an adopter's reconciler")
}

// requireSnippetsAreTestedCode checks that each verbatim block of the
// document at path appears line for line in the file it names, and returns
// the blocks.
func requireSnippetsAreTestedCode(t *testing.T, path string) []snippet {
	t.Helper()
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	snippets := docSnippets(t, path, string(doc))
	for _, s := range snippets {
		src, err := os.ReadFile(s.file)
		require.NoError(t, err, "%s:%d names %s", path, s.line, s.file)
		assert.True(t, containsVerbatim(strings.Split(string(src), "\n"), s.lines),
			"%s:%d: the block is not in %s as it is", path, s.line, s.file)
	}
	return snippets
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

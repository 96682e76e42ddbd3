package testenv

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The package documentation shows the adopter's test as it is: each code
// block of doc.go appears, line for line, in testdata/adopter/shop_test.go,
// the test TestAdopterModuleRunsTestenvFromTheModuleZip runs.
func TestPackageDocShowsTheAdopterTest(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	require.NotNil(t, f.Doc)
	src, err := os.ReadFile(filepath.Join("testdata", "adopter", "shop_test.go"))
	require.NoError(t, err)

	blocks := codeBlocks(f.Doc.Text())
	require.NotEmpty(t, blocks, "the package documentation shows the adopter's test")
	for _, b := range blocks {
		assert.Contains(t, string(src), b, "a code block of doc.go is not in testdata/adopter/shop_test.go as it is")
	}
}

// codeBlocks returns the code blocks of a doc comment's text, each a run of
// lines indented by a tab (blank lines inside included), with that tab
// removed.
func codeBlocks(doc string) []string {
	var blocks []string
	var cur []string
	flush := func() {
		for len(cur) > 0 && cur[len(cur)-1] == "" {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		}
		cur = nil
	}
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "\t"):
			cur = append(cur, strings.TrimPrefix(line, "\t"))
		case line == "" && len(cur) > 0:
			cur = append(cur, "")
		default:
			flush()
		}
	}
	flush()
	return blocks
}

func TestCodeBlocks(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{name: "no code", doc: "Package p.\n\nMore text.\n", want: nil},
		{name: "a block with a blank line inside, dedented once",
			doc:  "Text:\n\n\tfunc f() {\n\t\tg()\n\t}\n\n\tvar x int\n\nMore.\n",
			want: []string{"func f() {\n\tg()\n}\n\nvar x int\n"}},
		{name: "two blocks", doc: "A:\n\n\ta()\n\nB:\n\n\tb()\n", want: []string{"a()\n", "b()\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, codeBlocks(tt.doc))
		})
	}
}

package controller

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notCode is a line grep -Ev '^\s*($|//)' leaves out: blank, or a comment.
var notCode = regexp.MustCompile(`^\s*($|//)`)

// Each engine's controller is at most 30 lines of code, counted as
// grep -Ev '^\s*($|//)' counts them, the package clause and imports
// included: all an operator writes to adopt the engine with crconverge (the
// README links these files).
func TestEachControllerIsAtMostThirtyLinesOfCode(t *testing.T) {
	for _, file := range []string{"rollout.go", "addon.go", "payload.go"} {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.LessOrEqual(t, codeLines(string(src)), 30)
		})
	}
}

// codeLines counts the lines of src that are neither blank nor a comment.
func codeLines(src string) int {
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		if !notCode.MatchString(line) {
			n++
		}
	}
	return n
}

func TestCodeLines(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{name: "nothing", src: "", want: 0},
		{name: "blank lines and comments", src: "\n// a\n\t// b\n  \n", want: 0},
		{name: "code, a trailing comment included", src: "package p\n\nvar x = 1 // one\n", want: 2},
		{name: "a line that only starts like a comment", src: "\t/* c */ x()\n", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, codeLines(tt.src))
		})
	}
}

package payload

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// sourceReasons enumerates, in the package's non-test files, the values of the
// Reason* constants and the expressions every Reason field is set from.
func sourceReasons(t *testing.T) (constants map[string]string, written []string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	constants = map[string]string{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i >= len(n.Values) {
						break
					}
					if !strings.HasPrefix(name.Name, "Reason") {
						continue
					}
					switch v := n.Values[i].(type) {
					case *ast.BasicLit:
						constants[name.Name], err = strconv.Unquote(v.Value)
						require.NoError(t, err)
					case *ast.SelectorExpr:
						require.Contains(t, holdReasons, v.Sel.Name, "%s is a hold reason of the root package", name.Name)
						constants[name.Name] = holdReasons[v.Sel.Name]
					}
				}
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Reason" {
					written = append(written, shapeOf(n.Value))
				}
			}
			return true
		})
	}
	return constants, written
}

// holdReasons are the root package's hold reasons an engine's reason constants
// may name.
var holdReasons = map[string]string{"HoldPaused": converge.HoldPaused, "HoldWindowClosed": converge.HoldWindowClosed}

// shapeOf names the shape of a reason's expression: a literal, a name, a call…
func shapeOf(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		return "literal " + e.Value
	case *ast.Ident:
		return "name " + e.Name
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return "name " + x.Name + "." + e.Sel.Name
		}
		if _, ok := e.X.(*ast.IndexExpr); ok && e.Sel.Name == "Reason" {
			return "hold reason"
		}
	case *ast.CallExpr:
		if fn, ok := e.Fun.(*ast.Ident); ok {
			return "call " + fn.Name
		}
	}
	return "other"
}

// TestReasonsIsTheClosedListOfWhatTheWorkerWrites enumerates the reasons the worker
// writes: every Reason field in its source is a reason constant, the state it
// applies in, a failure's reason made valid (sanitizeReason) or a classification
// (reasonForError, a condensed error's plural reason) or a hold's, never a literal; and Reasons
// lists every constant, every class of API errors, AsExpected and the states used as
// reasons, each once, sorted.
func TestReasonsIsTheClosedListOfWhatTheWorkerWrites(t *testing.T) {
	constants, written := sourceReasons(t)
	require.NotEmpty(t, written)
	for _, w := range written {
		kind, name, _ := strings.Cut(w, " ")
		switch {
		case kind == "name" && (strings.HasPrefix(name, "Reason") || name == "conditions.ReasonAsExpected" || name == "reason"):
		case kind == "call" && (name == "sanitizeReason" || name == "string"):
		case kind == "hold": // a status's hold, whose reasons are the constants
		default:
			t.Errorf("a reason is written from %s, not from a constant", w)
		}
	}

	want := []string{conditions.ReasonAsExpected, string(StateInitializing), string(StateUpdating),
		converge.HoldPaused, converge.HoldWindowClosed}
	for name, value := range constants {
		assert.Contains(t, Reasons(), value, "Reasons lists %s", name)
		want = append(want, value)
	}
	for _, c := range errorClasses {
		want = append(want, c.reason)
	}
	slices.Sort(want)
	assert.Equal(t, slices.Compact(want), Reasons(), "Reasons is every reason the worker writes, each once, sorted")
	assert.Len(t, constants, 11, "the reason constants")
}

package converge_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The engines' files hold one subject and their functions one step: a file
// of more than maxFileLines lines or a function of more than maxFuncLines
// lines is a room that holds several.
const (
	maxFileLines = 500
	maxFuncLines = 80
)

// engineDirs are the trees whose non-test, non-generated Go files the size
// rule covers.
var engineDirs = []string{"rollout", "addon", "payload"}

// TestEngineFilesAndFunctionsStaySmall keeps every non-test, non-generated
// file of the engines (and their subpackages) within maxFileLines lines and
// every function within maxFuncLines; with -v it prints the largest of each.
func TestEngineFilesAndFunctionsStaySmall(t *testing.T) {
	files, funcs := engineSizes(t)
	for _, f := range files {
		if f.lines > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it by subject", f.name, f.lines, maxFileLines)
		}
	}
	for _, f := range funcs {
		if f.lines > maxFuncLines {
			t.Errorf("%s has %d lines, more than %d: split it by step", f.name, f.lines, maxFuncLines)
		}
	}
	for _, l := range []struct {
		what  string
		sizes []size
	}{{"files", files}, {"functions", funcs}} {
		var b strings.Builder
		for _, s := range l.sizes[:min(5, len(l.sizes))] {
			fmt.Fprintf(&b, " %s %d;", s.name, s.lines)
		}
		t.Logf("largest %s:%s", l.what, b.String())
	}
}

// size is the line count of a file or function.
type size struct {
	name  string
	lines int
}

// engineSizes returns the engines' non-test, non-generated files and their
// functions, each largest first.
func engineSizes(t *testing.T) (files, funcs []size) {
	t.Helper()
	fset := token.NewFileSet()
	for _, dir := range engineDirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") ||
				strings.HasSuffix(path, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files = append(files, size{path, fset.Position(f.End()).Line})
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok {
					lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
					funcs = append(funcs, size{path + ":" + funcName(fn), lines})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	largestFirst := func(a, b size) int { return b.lines - a.lines }
	slices.SortStableFunc(files, largestFirst)
	slices.SortStableFunc(funcs, largestFirst)
	return files, funcs
}

// funcName names a function or method as godoc does: Recv.Name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// maxPayloadExports bounds the payload package's API: the worker's face,
// with the task-graph runner and the manifest loader in packages of their
// own. The holds every engine shares (converge.HoldPaused,
// converge.HoldWindowClosed) stay the root package's.
const maxPayloadExports = 75

// TestPayloadExportsStayFew keeps the payload package's exported
// identifiers (top-level names plus methods of exported types, generated
// DeepCopy included) within maxPayloadExports; with -v it prints the count
// of every package.
func TestPayloadExportsStayFew(t *testing.T) {
	counts := exportCounts(t, ".")
	if n := counts["payload"]; n > maxPayloadExports {
		t.Errorf("payload exports %d identifiers, more than %d", n, maxPayloadExports)
	}
	keys := slices.Sorted(maps.Keys(counts))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %d;", k, counts[k])
	}
	t.Logf("exports:%s", b.String())
}

// exportCounts returns, by package directory under root (outside testdata,
// examples, hack and nested modules), the number of exported top-level
// names and methods of exported types in its non-test files.
func exportCounts(t *testing.T, root string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "examples", "hack", ".git", "contrib":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		counts[filepath.Dir(path)] += exportsOf(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// exportsOf counts a file's exported top-level names and the exported
// methods of its exported types.
func exportsOf(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if !decl.Name.IsExported() {
				continue
			}
			if recv, _, isMethod := strings.Cut(funcName(decl), "."); !isMethod || ast.IsExported(recv) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					if spec.Name.IsExported() {
						n++
					}
				case *ast.ValueSpec:
					for _, name := range spec.Names {
						if name.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

// TestNestedModulesImportNoInternals keeps every nested module (contrib/…)
// off the root module's internal packages and the examples' harnesses:
// once released, a module that imports another module's internal package
// depends on code that module may change in any version.
func TestNestedModulesImportNoInternals(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("contrib", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, "github.com/converge-dev/converge/internal/") ||
				strings.HasPrefix(p, "github.com/converge-dev/converge/examples/") {
				t.Errorf("%s imports %s, another module's internals", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

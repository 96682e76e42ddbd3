//go:build integration

package testenv

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adopterVersion is the version the adopter's module requires converge at;
// a replace directive points it at the copy of the repository.
const adopterVersion = "v0.0.0-20260101000000-000000000000"

// TestAdopterModuleRunsTestenvFromTheModuleZip runs the test of an adopter's
// reconciler (testdata/adopter, the test docs/testenv.md shows) in a module
// that requires converge by version, replaced by a read-only copy of the
// repository holding what the module zip holds: no nested module (no
// contrib/, no tools module), no vendored package, no symbolic link. So
// testenv works as adopters get it from their module cache, and finds the
// binaries built from the working tree in the same cache, under the same
// version key, without building them again.
func TestAdopterModuleRunsTestenvFromTheModuleZip(t *testing.T) {
	ctx := context.Background()
	_, err := EnsureBinaries(ctx) // so that the adopter's test finds them built
	require.NoError(t, err)
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	work := t.TempDir()
	converge := filepath.Join(work, "converge")
	copyAsModuleZip(t, root, converge)
	for _, p := range []string{"contrib/controller-runtime/go.mod", "internal/tools/go.mod"} {
		assert.NoFileExists(t, filepath.Join(converge, p), "a nested module is not in the module zip")
	}
	require.FileExists(t, filepath.Join(converge, "testenv", "tools", "go.mod.txt"), "the build module travels embedded")

	shop := filepath.Join(work, "shop")
	require.NoError(t, os.MkdirAll(shop, 0o755))
	for _, f := range []string{"shop.go", "shop_test.go"} {
		copyFile(t, filepath.Join("testdata", "adopter", f), filepath.Join(shop, f))
	}
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(shop, "go.sum"))
	require.NoError(t, os.WriteFile(filepath.Join(shop, "go.mod"), []byte("module example.com/shop\n\ngo 1.26.0\n\n"+
		"require github.com/converge-dev/converge "+adopterVersion+"\n\n"+
		"replace github.com/converge-dev/converge => ../converge\n"), 0o644))

	goCmd(t, shop, "-mod=mod", "mod", "tidy")
	dir := goCmd(t, shop, "-mod=readonly", "list", "-m", "-f", "{{.Dir}}", "github.com/converge-dev/converge")
	require.Equal(t, converge, strings.TrimSpace(dir), "the adopter's module builds converge from the copy")
	out := goCmd(t, shop, "-mod=readonly", "test", "-count=1", "-timeout=10m", "-v", "./...")
	assert.Contains(t, out, "--- PASS: TestReconcileAppliesTheSettings")
	assert.Contains(t, out, "--- PASS: TestTheKubeconfigListsTheNamespaces")
	assert.Contains(t, out, "--- PASS: TestReconcileUnderFaults")
	assert.NotContains(t, out, "testenv: building", "the binaries of the working tree serve the copy: the version key is the same")
}

// goCmd runs the go command in dir with GOFLAGS=goflags, outside any
// workspace, and returns its combined output; it fails the test if go fails.
func goCmd(t *testing.T, dir, goflags string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+goflags, "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "go %s in %s:\n%s", strings.Join(args, " "), dir, out.String())
	return out.String()
}

// copyAsModuleZip copies the files of the repository at root that git
// tracks or would track into dst as the module zip holds them (the rules of
// golang.org/x/mod/zip for a go 1.24+ module: files of a nested module, of a
// vendored package, symbolic links and other irregular files, and
// .hg_archival.txt are left out), and makes the copy read-only, as the
// module cache is.
func copyAsModuleZip(t *testing.T, root, dst string) {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	listed, err := ls.Output()
	require.NoError(t, err)
	var files []string
	nested := map[string]bool{} // directories of a go.mod other than the root's
	for _, p := range strings.Split(strings.TrimRight(string(listed), "\x00"), "\x00") {
		info, err := os.Lstat(filepath.Join(root, p))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		require.NoError(t, err)
		if !info.Mode().IsRegular() || p == ".hg_archival.txt" || vendored(p) {
			continue
		}
		if dir, base := path.Split(p); strings.EqualFold(base, "go.mod") && dir != "" {
			nested[dir] = true
		}
		files = append(files, p)
	}
	for _, p := range files {
		if inNestedModule(p, nested) {
			continue
		}
		copyFile(t, filepath.Join(root, p), filepath.Join(dst, p))
	}
	require.NoError(t, filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dst {
			return err
		}
		mode := fs.FileMode(0o444)
		if d.IsDir() {
			mode = 0o555
		}
		return os.Chmod(p, mode)
	}))
	require.NoError(t, os.Chmod(dst, 0o555))
	t.Cleanup(func() {
		_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// vendored reports whether the module zip leaves p out as a file of a
// vendored package.
func vendored(p string) bool {
	if p == "vendor/modules.txt" {
		return true
	}
	var rest string
	switch i := strings.Index(p, "/vendor/"); {
	case strings.HasPrefix(p, "vendor/"):
		rest = strings.TrimPrefix(p, "vendor/")
	case i >= 0:
		rest = p[i+len("/vendor/"):]
	default:
		return false
	}
	return strings.Contains(rest, "/")
}

// inNestedModule reports whether p is in a directory of nested or under one.
func inNestedModule(p string, nested map[string]bool) bool {
	for dir, _ := path.Split(p); dir != ""; dir, _ = path.Split(strings.TrimSuffix(dir, "/")) {
		if nested[dir] {
			return true
		}
	}
	return false
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(to)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

func TestParseRunLevel(t *testing.T) {
	tests := []struct {
		file      string
		level     int
		component string
		ok        bool
	}{
		{"0000_50_console_03_deployment.yaml", 50, "console", true},
		{"0000_05_x-y-z_file1", 5, "x-y-z", true},
		{"0000_5_x-y-z_file1", 5, "x-y-z", true},
		{"dir/0000_10_a_b.yaml", 10, "a", true},
		{"0000_10_cluster-version-operator_01_adminack.yaml", 10, "cluster-version-operator", true},
		{"0000_99999999999999999999999_a_b.yaml", 0, "", false},
		{"0000_50_console.yaml", 0, "", false},
		{"image-references", 0, "", false},
		{"0001_50_a_b.yaml", 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			level, component, ok := ParseRunLevel(tt.file)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.level, level)
			assert.Equal(t, tt.component, component)
		})
	}
}

func TestCompareFiles(t *testing.T) {
	files := []string{"b.yaml", "0000_10_a_x.yaml", "0000_5_b_x.yaml", "a.yaml", "0000_05_a_x.yaml", "0000_100_a_x.yaml"}
	want := []string{"0000_05_a_x.yaml", "0000_5_b_x.yaml", "0000_10_a_x.yaml", "0000_100_a_x.yaml", "a.yaml", "b.yaml"}
	sortFiles(files)
	assert.Equal(t, want, files)
}

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"0000_10_b_01_ns.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: b
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: b
  annotations:
    payload.converge.dev/depends-on: "Namespace/b, ConfigMap/a/base"
`)},
		"0000_05_a_00_cm.json": {Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"base","namespace":"a"}}`)},
		"README.md":            {Data: []byte("not a manifest")},
		"sub/0000_01_x_y.yaml": {Data: []byte("ignored: true")},
	}
	manifests, err := Load(fsys, Options{})
	require.NoError(t, err)
	require.Len(t, manifests, 3)

	assert.Equal(t, "0000_05_a_00_cm.json", manifests[0].File)
	assert.Equal(t, "ConfigMap/a/base", manifests[0].Ref())

	assert.Equal(t, "Namespace/b", manifests[1].Ref())
	assert.Equal(t, 1, manifests[1].Document)

	assert.Equal(t, 3, manifests[2].Document, "documents are counted in the file, empty ones too")
	assert.Equal(t, "ConfigMap/b/settings", manifests[2].Ref())
	assert.Equal(t, "b", manifests[2].Namespace())
	assert.Equal(t, []string{"Namespace/b", "ConfigMap/a/base"}, manifests[2].DependsOn)
	assert.Equal(t, "v1", manifests[2].GVK.Version)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		document int
		contains string
	}{
		{name: "bad yaml", data: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\nmetadata: [unclosed\n", document: 2},
		{name: "no apiVersion", data: "kind: ConfigMap\nmetadata:\n  name: x\n", document: 1, contains: "no apiVersion"},
		{name: "no kind", data: "apiVersion: v1\nmetadata:\n  name: x\n", document: 1, contains: "no kind"},
		{name: "no kind in a later document", data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nmetadata:\n  name: x\n", document: 2, contains: "no kind"},
		{name: "no name", data: "apiVersion: v1\nkind: ConfigMap\n", document: 1, contains: "metadata.name"},
		{name: "not an object", data: "- a\n- b\n", document: 1, contains: "not an object"},
		{name: "delete annotation not true", data: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    release.openshift.io/delete: \"yes\"\n", document: 1, contains: "release.openshift.io/delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(fstest.MapFS{"0000_10_a_x.yaml": {Data: []byte(tt.data)}}, Options{})
			require.ErrorIs(t, err, converge.ErrInvalid)
			var mErr *LoadError
			require.ErrorAs(t, err, &mErr)
			assert.Equal(t, "0000_10_a_x.yaml", mErr.File)
			assert.Equal(t, tt.document, mErr.Document)
			assert.Contains(t, err.Error(), `manifest: file "0000_10_a_x.yaml" document`)
			assert.Contains(t, err.Error(), tt.contains)
		})
	}
	_, err := Load(nil, Options{})
	require.ErrorIs(t, err, converge.ErrInvalid)
	_, err = Load(fstest.MapFS{}, Options{MaxManifestBytes: -1})
	require.ErrorIs(t, err, converge.ErrInvalid)
}

func TestLoadMarksManifestsForDeletion(t *testing.T) {
	manifests, err := Load(fstest.MapFS{"0000_10_a_x.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: a\n  annotations:\n    release.openshift.io/delete: \"true\"\n")}}, Options{})
	require.NoError(t, err)
	require.Len(t, manifests, 1)
	assert.True(t, manifests[0].Delete)
}

// endlessFile is a file whose one document never ends; it counts the bytes read.
type endlessFile struct{ read *int64 }

func (f endlessFile) Stat() (fs.FileInfo, error) { return nil, errors.New("no stat") }
func (f endlessFile) Close() error               { return nil }
func (f endlessFile) Read(p []byte) (int, error) {
	const line = "key: value\n"
	for i := range p {
		p[i] = line[(int(*f.read)+i)%len(line)]
	}
	*f.read += int64(len(p))
	return len(p), nil
}

type endlessFS struct{ read *int64 }

func (e endlessFS) Open(name string) (fs.File, error) {
	if name == "." {
		return fstest.MapFS{"0000_10_a_big.yaml": {}}.Open(".")
	}
	return endlessFile(e), nil
}

func (e endlessFS) ReadDir(string) ([]fs.DirEntry, error) {
	return fstest.MapFS{"0000_10_a_big.yaml": {}}.ReadDir(".")
}

func TestLoadRefusesAManifestOverTheLimitWithoutReadingItAll(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		want  int64
	}{
		{name: "stated limit", limit: 64 << 10, want: 64 << 10},
		{name: "default limit", limit: 0, want: defaultMaxManifestBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var read int64
			_, err := Load(endlessFS{read: &read}, Options{MaxManifestBytes: tt.limit})
			var mErr *LoadError
			require.ErrorAs(t, err, &mErr)
			assert.Equal(t, "0000_10_a_big.yaml", mErr.File)
			assert.Equal(t, 1, mErr.Document)
			assert.ErrorContains(t, err, fmt.Sprintf("larger than the limit of %d bytes", tt.want))
			assert.LessOrEqual(t, read, tt.want+8192, "read no more than the limit and a buffer")
		})
	}
}

// cvoPattern is the cluster-version operator's expression that ParseRunLevel implements.
var cvoPattern = regexp.MustCompile(`^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_`)

func FuzzParseRunLevel(f *testing.F) {
	for _, s := range []string{"0000_50_console_03_x.yaml", "0000_05_x-y-z_f", "0000_1_a--b_c", "0000_1_-a_c", "0000__a_", "0000_1_a.b_c", "0000_1_é_c", "0000_99999999999999999999_a_b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if strings.Contains(name, "/") {
			return // ParseRunLevel reads the base name
		}
		level, component, ok := ParseRunLevel(name)
		match := cvoPattern.FindStringSubmatch(name)
		if match == nil {
			if ok {
				t.Fatalf("%q: parsed %d %q, the expression does not match", name, level, component)
			}
			return
		}
		want, err := strconv.Atoi(match[1])
		if err != nil {
			if ok {
				t.Fatalf("%q: parsed a level that does not fit an int", name)
			}
			return
		}
		if !ok || level != want || component != match[2] {
			t.Fatalf("%q: got %d %q %t, want %d %q", name, level, component, ok, want, match[2])
		}
	})
}

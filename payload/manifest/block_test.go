package manifest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockDocuments are documents the block decoder reads itself (fast) or leaves to the
// library (not fast), and that both read alike.
var blockDocuments = []struct {
	name string
	doc  string
	fast bool
}{
	{"a manifest", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the name
  namespace: "ns"
  labels: {}
  annotations:
    'quoted key': 'it''s'
    escaped: "tab\there \u00e9 \x41 \" \\ \N"
spec:
  replicas: 3
  paused: false
  minReadySeconds: -1
  template:
    spec:
      containers:
      - name: web
        image: quay.io/web:1.2.3
        args: []
        command:
          - /bin/web
          - --port=8080
        env:
        - name: EMPTY
          value:
        - name: TILDE
          value: ~
      - - nested
        - sequence
      -
        name: late
`, true},
	{"literal block scalars", `data:
  clip: |
    line one
      indented

    after an empty line
  strip: |-
    no break at the end
  keep: |+
    breaks kept


  last: x
`, true},
	{"comments and spaces", "# a comment\n\nkind: ConfigMap   \nmetadata:\n\n  # inside\n  name: x\n", true},
	{"a document of comments", "# nothing\n\n", true},
	{"an integer beyond int64", "n: 9223372036854775808\n", false},
	{"a float", "cpu: 0.5\n", false},
	{"a version", "version: 4.15.0\n", true},
	{"a date", "day: 2001-12-14\n", false},
	{"an octal number", "mode: 0644\n", false},
	{"a hex number", "mode: 0x1F\n", false},
	{"a number with underscores", "n: 1_000\n", false},
	{"yes", "enabled: yes\n", true},
	{"a bool key", "on: true\n", false},
	{"a folded scalar", "text: >\n  folded\n  lines\n", false},
	{"a plain scalar on two lines", "text: one\n  two\n", false},
	{"a quoted scalar on two lines", "text: \"one\n  two\"\n", false},
	{"a flow sequence", "args: [a, b]\n", false},
	{"an anchor", "a: &x 1\nb: *x\n", false},
	{"a tag", "a: !!str 1\n", false},
	{"a merge key", "base: {}\n<<: x\n", false},
	{"a duplicate key", "a: 1\na: 2\n", false},
	{"a sequence at the top", "- a\n", false},
	{"a scalar at the top", "just text\n", false},
	{"a tab", "a:\tb\n", false},
	{"a carriage return", "a: b\r\n", false},
	{"a key too long for YAML", strings.Repeat("k", 1100) + ": v\n", false},
	{"an unknown escape", `a: "\/"` + "\n", false},
	{"content after a quoted scalar", `a: "b" c` + "\n", false},
	{"a value with a mapping indicator", "a: b: c\n", false},
	{"a literal scalar at the end without a line break", "a: |\n  text", false},
	{"a literal scalar with an indentation indicator", "a: |2\n   text\n", false},
	{"a byte-order mark", "\ufeffa: b\n", false},
	{"a document marker inside", "a: b\n...\n", false},
}

func TestDecodeBlockReadsAsTheLibraryDoes(t *testing.T) {
	for _, tt := range blockDocuments {
		t.Run(tt.name, func(t *testing.T) {
			object, empty, ok := decodeBlock([]byte(tt.doc))
			assert.Equal(t, tt.fast, ok, "read by the block decoder")
			if !ok {
				return
			}
			want, wantEmpty, err := decodeYAML([]byte(tt.doc))
			require.NoError(t, err)
			assert.Equal(t, wantEmpty, empty)
			assert.Equal(t, want, object)
		})
	}
}

// FuzzDecodeBlock holds that a document the block decoder reads, it reads as the
// library (sigs.k8s.io/yaml, then JSON into a map) does, value for value.
func FuzzDecodeBlock(f *testing.F) {
	for _, tt := range blockDocuments {
		f.Add([]byte(tt.doc))
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "payload-apply", "*", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			f.Add(doc)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		object, empty, ok := decodeBlock(doc)
		if !ok {
			return
		}
		want, wantEmpty, err := decodeYAML(doc)
		if err != nil {
			t.Fatalf("the block decoder read %q, the library refuses it: %v", doc, err)
		}
		if empty != wantEmpty || !assert.ObjectsAreEqual(want, object) {
			t.Fatalf("%q: the block decoder read %#v (empty %t), the library %#v (empty %t)", doc, object, empty, want, wantEmpty)
		}
	})
}

// largeManifest is a ConfigMap of about size bytes in one of two shapes: one value
// that large, or many keys.
func largeManifest(shape string, size int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\n  namespace: ns\ndata:\n")
	switch shape {
	case "one-large-value":
		b.WriteString("  value: ")
		for b.Len() < size {
			b.WriteString("abcdefghijklmnopqrstuvwxyz0123456789")
		}
		b.WriteString("\n")
	default:
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "  key-%08d: value %08d of many\n", i, i)
		}
	}
	return b.Bytes()
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BenchmarkLoadLargeManifest loads a 50 MB manifest (the limit raised to 64 MiB) in
// two shapes and reports, beside B/op, the bytes allocated per byte of the document.
func BenchmarkLoadLargeManifest(b *testing.B) {
	for _, shape := range []string{"one-large-value", "many-keys"} {
		doc := largeManifest(shape, 50<<20)
		fsys := fstest.MapFS{"0000_10_a_large.yaml": {Data: doc}}
		b.Run(shape, func(b *testing.B) {
			b.ReportAllocs()
			bytes := allocated(func() {
				for b.Loop() {
					if manifests, err := Load(fsys, Options{MaxManifestBytes: 64 << 20}); err != nil || len(manifests) != 1 {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(bytes)/float64(b.N)/float64(len(doc)), "allocated/document")
		})
	}
}

// TestLoadAllocatesAtMostSixTimesTheDocument: loading a large manifest allocates at
// most six times its size, in both shapes (BenchmarkLoadLargeManifest measures 50 MB).
func TestLoadAllocatesAtMostSixTimesTheDocument(t *testing.T) {
	for _, shape := range []string{"one-large-value", "many-keys"} {
		t.Run(shape, func(t *testing.T) {
			doc := largeManifest(shape, 8<<20)
			fsys := fstest.MapFS{"0000_10_a_large.yaml": {Data: doc}}
			var manifests []Manifest
			bytes := allocated(func() {
				var err error
				manifests, err = Load(fsys, Options{MaxManifestBytes: 64 << 20})
				require.NoError(t, err)
			})
			require.Len(t, manifests, 1)
			assert.Equal(t, "large", manifests[0].Name())
			assert.LessOrEqual(t, float64(bytes)/float64(len(doc)), 6.0, "%d bytes allocated for a document of %d", bytes, len(doc))
		})
	}
}

// TestLoadRefusesALargeManifestEarlyByDefault: with the default limit, a large manifest
// of either shape (16 MB here) is refused once 3 MiB of it is read.
func TestLoadRefusesALargeManifestEarlyByDefault(t *testing.T) {
	for _, shape := range []string{"one-large-value", "many-keys"} {
		t.Run(shape, func(t *testing.T) {
			var read int64
			fsys := countingFS{FS: fstest.MapFS{"0000_10_a_large.yaml": {Data: largeManifest(shape, 16<<20)}}, read: &read}
			_, err := Load(fsys, Options{})
			assert.ErrorContains(t, err, fmt.Sprintf("larger than the limit of %d bytes", defaultMaxManifestBytes))
			assert.LessOrEqual(t, read, int64(defaultMaxManifestBytes+8192), "read no more than the limit and a buffer")
		})
	}
}

// countingFS counts the bytes read from its files.
type countingFS struct {
	fs.FS
	read *int64
}

func (c countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, read: c.read}, nil
}

func (c countingFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(c.FS, name) }

type countingFile struct {
	fs.File
	read *int64
}

func (c countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	*c.read += int64(n)
	return n, err
}

package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// defaultMaxManifestBytes is the size limit of one manifest when Options sets none:
// 3 MiB, the largest request body kube-apiserver accepts, so a manifest Load accepts is
// one the cluster could accept too.
const defaultMaxManifestBytes = 3 << 20

// Options configures Load; the zero value is the default.
type Options struct {
	// MaxManifestBytes bounds the size of one YAML or JSON document (default 3 MiB,
	// the largest request body kube-apiserver accepts). A larger document is refused
	// as soon as the limit is passed, without reading the rest of it.
	MaxManifestBytes int64
}

// LoadError reports a payload file, or a document of it, that Load could not read.
type LoadError struct {
	// File is the file name.
	File string
	// Document is the 1-based document within File (0 when the file itself could not be read).
	Document int
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *LoadError) Error() string {
	if e.Document == 0 {
		return fmt.Sprintf("manifest: file %q: %v", e.File, e.Err)
	}
	return fmt.Sprintf("manifest: file %q document %d: %v", e.File, e.Document, e.Err)
}

// Unwrap returns the cause.
func (e *LoadError) Unwrap() error { return e.Err }

// Is reports converge.ErrInvalid: a payload Load cannot read is bad input.
func (e *LoadError) Is(target error) bool { return target == converge.ErrInvalid }

// Load reads every .yaml, .yml and .json file at the root of fsys, in CompareFiles order,
// and returns one Manifest per non-empty document. A document that is not valid YAML,
// lacks apiVersion, kind or metadata.name, has a DeleteAnnotation other than "true", or
// is larger than opts.MaxManifestBytes is a *LoadError naming the file and the
// document. Files are streamed: no document larger than the limit is held in memory.
func Load(fsys fs.FS, opts Options) ([]Manifest, error) {
	if fsys == nil {
		return nil, input.Invalidf("manifest", "payload directory", "nil fs.FS")
	}
	if opts.MaxManifestBytes < 0 {
		return nil, input.Invalidf("manifest", "options", "maxManifestBytes %d is negative", opts.MaxManifestBytes)
	}
	limit := opts.MaxManifestBytes
	if limit == 0 {
		limit = defaultMaxManifestBytes
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("manifest: reading payload directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch path.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			files = append(files, e.Name())
		}
	}
	sortFiles(files)

	var manifests []Manifest
	for _, file := range files {
		manifests, err = loadFile(manifests, fsys, file, limit)
		if err != nil {
			return nil, err
		}
	}
	return manifests, nil
}

func loadFile(manifests []Manifest, fsys fs.FS, file string, limit int64) ([]Manifest, error) {
	f, err := fsys.Open(file)
	if err != nil {
		return nil, &LoadError{File: file, Err: err}
	}
	defer f.Close()
	docs := documentReader{r: bufio.NewReader(f), limit: limit}
	if info, err := f.Stat(); err == nil && info.Size() > 0 {
		// One buffer the size of the file, or of the limit, for every document of it.
		docs.buf = make([]byte, 0, min(info.Size(), limit)+1)
	}
	for doc := 1; ; doc++ {
		raw, err := docs.next()
		if errors.Is(err, io.EOF) {
			return manifests, nil
		}
		if err != nil {
			return nil, &LoadError{File: file, Document: doc, Err: err}
		}
		m, empty, err := decodeDocument(raw)
		if err != nil {
			return nil, &LoadError{File: file, Document: doc, Err: err}
		}
		if empty {
			continue
		}
		m.File, m.Document = file, doc
		manifests = append(manifests, m)
	}
}

// documentReader splits a YAML stream into documents at "---" lines, refusing a
// document larger than limit as soon as it passes the limit.
type documentReader struct {
	r     *bufio.Reader
	limit int64
	buf   []byte
	eof   bool
}

// next returns the next document (possibly empty), or io.EOF after the last one.
func (d *documentReader) next() ([]byte, error) {
	if d.eof {
		return nil, io.EOF
	}
	d.buf = d.buf[:0]
	lineStart := 0
	for {
		chunk, err := d.r.ReadSlice('\n')
		if int64(len(d.buf)+len(chunk)) > d.limit {
			return nil, fmt.Errorf("the document is larger than the limit of %d bytes", d.limit)
		}
		d.buf = append(d.buf, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue // the line goes on
		case errors.Is(err, io.EOF):
			d.eof = true
			return d.buf, nil
		case err != nil:
			return nil, err
		}
		if isSeparator(d.buf[lineStart:]) {
			if lineStart == 0 {
				d.buf, lineStart = d.buf[:0], 0 // nothing before the separator: no document
				continue
			}
			return d.buf[:lineStart], nil
		}
		lineStart = len(d.buf)
	}
}

// isSeparator reports whether line is a YAML document separator: "---" followed by
// nothing but spaces or a comment.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// decodeDocument reads one document into a manifest. A document in the block style
// manifests use is read once (decodeBlock); any other goes through sigs.k8s.io/yaml,
// whose result the block decoder gives too.
func decodeDocument(raw []byte) (m Manifest, empty bool, err error) {
	object, empty, ok := decodeBlock(raw)
	if !ok {
		object, empty, err = decodeYAML(raw)
	}
	if err != nil || empty {
		return Manifest{}, empty, err
	}
	obj := &unstructured.Unstructured{Object: object}
	switch {
	case obj.GetAPIVersion() == "":
		return Manifest{}, false, errors.New("object has no apiVersion")
	case obj.GetKind() == "":
		return Manifest{}, false, errors.New("object has no kind")
	case obj.GetName() == "":
		return Manifest{}, false, errors.New("object has no metadata.name")
	}
	m = Manifest{GVK: obj.GroupVersionKind(), Object: obj}
	annotations := obj.GetAnnotations()
	if deps := annotations[DependsOnAnnotation]; deps != "" {
		for _, d := range strings.Split(deps, ",") {
			if d = strings.TrimSpace(d); d != "" {
				m.DependsOn = append(m.DependsOn, d)
			}
		}
	}
	if v, ok := annotations[DeleteAnnotation]; ok {
		if v != "true" {
			return Manifest{}, false, fmt.Errorf("annotation %s must be \"true\", got %q", DeleteAnnotation, v)
		}
		m.Delete = true
	}
	return m, false, nil
}

// decodeYAML reads a document with sigs.k8s.io/yaml: YAML to JSON, then JSON into a map.
func decodeYAML(raw []byte) (object map[string]any, empty bool, err error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, false, err
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return nil, true, nil
	}
	if err := utiljson.Unmarshal(js, &object); err != nil {
		return nil, false, fmt.Errorf("the document is not an object: %w", err)
	}
	return object, false, nil
}

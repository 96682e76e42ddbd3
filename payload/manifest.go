package payload

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// DependsOnAnnotation lists, comma separated, the references (see Manifest.Ref) of the
// manifests a manifest needs before it can be applied. Load copies it into
// Manifest.DependsOn; the graph builders honour it.
const DependsOnAnnotation = "payload.converge.dev/depends-on"

// Manifest is one object of a payload, as read from one document of one file.
type Manifest struct {
	// File is the name of the file the manifest was read from, e.g. "0000_50_console_03_deployment.yaml".
	File string
	// Document is the 1-based position of the manifest's YAML document within File.
	Document int
	// GVK is the object's group, version and kind.
	GVK schema.GroupVersionKind
	// Object is the object itself.
	Object *unstructured.Unstructured
	// DependsOn lists the references (Ref) of manifests that must be applied first.
	DependsOn []string
	// Delete marks an object to remove instead of apply (DeleteAnnotation).
	Delete bool
}

// DeleteAnnotation set to "true" marks a manifest whose object the Worker removes, in
// graph order, instead of applying it (the cluster-version operator's annotation); Load
// refuses any other value.
const DeleteAnnotation = "release.openshift.io/delete"

// defaultMaxManifestBytes is the size limit of one manifest when LoadOptions sets none:
// 3 MiB, the largest request body kube-apiserver accepts, so a manifest Load accepts is
// one the cluster could accept too.
const defaultMaxManifestBytes = 3 << 20

// LoadOptions configures Load; the zero value is the default.
type LoadOptions struct {
	// MaxManifestBytes bounds the size of one YAML or JSON document (default 3 MiB,
	// the largest request body kube-apiserver accepts). A larger document is refused as soon as the limit is
	// passed, without reading the rest of it.
	MaxManifestBytes int64
}

// Namespace returns the object's namespace ("" when cluster scoped or when there is no object).
func (m *Manifest) Namespace() string {
	if m == nil || m.Object == nil {
		return ""
	}
	return m.Object.GetNamespace()
}

// Name returns the object's name ("" when there is no object).
func (m *Manifest) Name() string {
	if m == nil || m.Object == nil {
		return ""
	}
	return m.Object.GetName()
}

// Ref names the manifest for dependencies: "Kind/namespace/name", or "Kind/name" when
// cluster scoped.
func (m *Manifest) Ref() string {
	if m == nil {
		return ""
	}
	if ns := m.Namespace(); ns != "" {
		return m.GVK.Kind + "/" + ns + "/" + m.Name()
	}
	return m.GVK.Kind + "/" + m.Name()
}

// resourceID is the human form used in messages: `deployment "ns/name"`.
func (m *Manifest) resourceID() string {
	name := m.Name()
	if name == "" {
		name = m.File
	}
	kind := strings.ToLower(m.GVK.Kind)
	if ns := m.Namespace(); ns != "" {
		return fmt.Sprintf("%s \"%s/%s\"", kind, ns, name)
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// ParseRunLevel reads the run level and component from a payload file name of the form
// "0000_<level>_<component>_<rest>", where the component is letters and digits in
// dash-separated words (the cluster-version operator's
// ^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_ without the regular expression). The
// level is a number: "0000_5_x_" and "0000_05_x_" are the same level 5 (the
// cluster-version operator compares the digits as strings and would keep them apart).
// ok is false when the name does not have that form or the level does not fit an int.
func ParseRunLevel(file string) (level int, component string, ok bool) {
	rest, found := strings.CutPrefix(path.Base(file), "0000_")
	if !found {
		return 0, "", false
	}
	digits, rest, found := strings.Cut(rest, "_")
	if !found || digits == "" || strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, "", false
	}
	component, _, found = strings.Cut(rest, "_")
	if !found || !validComponent(component) {
		return 0, "", false
	}
	level, err := strconv.Atoi(digits)
	if err != nil {
		return 0, "", false
	}
	return level, component, true
}

// validComponent reports whether s is one or more words of ASCII letters and digits
// joined by single dashes.
func validComponent(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// CompareFiles orders payload file names: names with a run level first, by level as a
// number and then by name; then names without a run level, by name.
func CompareFiles(a, b string) int {
	la, _, oka := ParseRunLevel(a)
	lb, _, okb := ParseRunLevel(b)
	switch {
	case oka && okb:
		if c := cmp.Compare(la, lb); c != 0 {
			return c
		}
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// ManifestError reports a document of a payload file that could not be read.
type ManifestError struct {
	// File is the file name.
	File string
	// Document is the 1-based document within File (0 when the file itself could not be read).
	Document int
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *ManifestError) Error() string {
	if e.Document == 0 {
		return fmt.Sprintf("payload: file %q: %v", e.File, e.Err)
	}
	return fmt.Sprintf("payload: file %q document %d: %v", e.File, e.Document, e.Err)
}

// Unwrap returns the cause.
func (e *ManifestError) Unwrap() error { return e.Err }

// Is reports converge.ErrInvalid: a manifest error is bad input.
func (e *ManifestError) Is(target error) bool { return target == converge.ErrInvalid }

// Load reads every .yaml, .yml and .json file at the root of fsys, in CompareFiles order,
// and returns one Manifest per non-empty document. A document that is not valid YAML,
// lacks apiVersion, kind or metadata.name, has a DeleteAnnotation other than "true", or
// is larger than opts.MaxManifestBytes is a *ManifestError naming the file and the
// document. Files are streamed: no document larger than the limit is held in memory.
func Load(fsys fs.FS, opts LoadOptions) ([]Manifest, error) {
	if fsys == nil {
		return nil, input.Invalidf("payload", "payload directory", "nil fs.FS")
	}
	if opts.MaxManifestBytes < 0 {
		return nil, input.Invalidf("payload", "load options", "maxManifestBytes %d is negative", opts.MaxManifestBytes)
	}
	limit := opts.MaxManifestBytes
	if limit == 0 {
		limit = defaultMaxManifestBytes
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("payload: reading payload directory: %w", err)
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
		return nil, &ManifestError{File: file, Err: err}
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
			return nil, &ManifestError{File: file, Document: doc, Err: err}
		}
		m, empty, err := decodeDocument(raw)
		if err != nil {
			return nil, &ManifestError{File: file, Document: doc, Err: err}
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

func sortFiles(files []string) { slices.SortFunc(files, CompareFiles) }

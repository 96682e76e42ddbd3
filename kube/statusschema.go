package kube

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/converge-dev/converge"
)

// ErrStatusSchema is matched by a status write the custom resource's
// definition cannot hold (a *StatusSchemaError).
var ErrStatusSchema = errors.New("kube: the status does not fit the resource's schema")

// ReasonStatusSchemaMismatch is the reason of the Warning event a
// StatusSchemaError reports.
const ReasonStatusSchemaMismatch = "StatusSchemaMismatch"

// StatusSchemaError is a status write the custom resource's definition
// cannot hold: the apiserver accepted the write but dropped Fields (the
// CRD's status schema lacks them, as a CRD generated before the engine's
// Status grew a field does, so they read back empty), or the definition
// has no status subresource (NoSubresource: nothing was written). It
// matches ErrStatusSchema.
//
// A store reports dropped fields once per resource and field in a
// process, on the write that first drops them (that write happened: later
// ones succeed without them), so an engine that goes on with what the
// schema keeps is not failed on every sync; a missing subresource fails
// every write.
type StatusSchemaError struct {
	// Resource names the object ("addons.example.com ns/name").
	Resource string
	// Fields are the JSON paths the apiserver dropped, list indices
	// written "[]" ("status.nodeStatuses[].installerSeen"), sorted.
	Fields []string
	// NoSubresource says the resource has no status subresource.
	NoSubresource bool
}

// Error implements error.
func (e *StatusSchemaError) Error() string {
	if e.NoSubresource {
		return "kube: " + e.Resource + " has no status subresource: enable it in its CustomResourceDefinition (subresources: {status: {}})"
	}
	return fmt.Sprintf("kube: the apiserver dropped %s of %s: add %s to its CustomResourceDefinition's status schema",
		strings.Join(e.Fields, ", "), e.Resource, plural(len(e.Fields), "the field", "the fields"))
}

// Is makes errors.Is(err, ErrStatusSchema) hold.
func (e *StatusSchemaError) Is(target error) bool { return target == ErrStatusSchema }

// Event is the Warning a host records about the resource.
func (e *StatusSchemaError) Event() converge.Event {
	return converge.Event{Type: converge.EventTypeWarning, Reason: ReasonStatusSchemaMismatch, Message: e.Error()}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// reported holds, by resource and field, the dropped fields reported in
// this process.
var reported sync.Map

// CheckStatusWritten compares the status written (its JSON form, a
// map[string]any from an unstructured object or json.Unmarshal) at path
// with what the apiserver returned, and returns a *StatusSchemaError for
// the fields it dropped that were not reported before for resource (a
// group resource, "addons.example.com"); what names the object in the
// error. Fields the apiserver added (defaults) or whose value it changed
// are not drops. crconverge's stores call it; a host's own store may too.
func CheckStatusWritten(resource, what string, path []string, written, returned any) error {
	var dropped []string
	droppedFields(strings.Join(path, "."), written, returned, &dropped)
	slices.Sort(dropped)
	dropped = slices.Compact(dropped)
	var fresh []string
	for _, f := range dropped {
		if _, seen := reported.LoadOrStore(resource+" "+f, true); !seen {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	return &StatusSchemaError{Resource: what, Fields: fresh}
}

// droppedFields appends to out the paths under at that written holds and
// returned does not.
func droppedFields(at string, written, returned any, out *[]string) {
	switch w := written.(type) {
	case map[string]any:
		r, _ := returned.(map[string]any)
		for k, v := range w {
			if v == nil {
				continue
			}
			rv, ok := r[k]
			if !ok {
				*out = append(*out, at+"."+k)
				continue
			}
			droppedFields(at+"."+k, v, rv, out)
		}
	case []any:
		r, _ := returned.([]any)
		for i, v := range w {
			if i < len(r) {
				droppedFields(at+"[]", v, r[i], out)
			}
		}
	}
}

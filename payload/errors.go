package payload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrInvalid is wrapped by every error about bad input: a malformed manifest, a graph with a
// cycle or an unknown dependency, a task without backoff steps, a nil host interface.
var ErrInvalid = errors.New("payload: invalid input")

// Effect is how much an UpdateError weighs on the update; effects are ordered
// Report < None < FailAfterInterval < Fail.
type Effect int

const (
	// EffectReport errors are reported but neither fail their task node nor the update.
	EffectReport Effect = iota
	// EffectNone errors fail their task node but are not an update failure.
	EffectNone
	// EffectFailAfterInterval errors fail the update once they persist for an interval.
	EffectFailAfterInterval
	// EffectFail errors fail the update. It is the effect of errors from Task.Run.
	EffectFail
)

// String returns the effect's name.
func (e Effect) String() string {
	switch e {
	case EffectReport:
		return "Report"
	case EffectNone:
		return "None"
	case EffectFailAfterInterval:
		return "FailAfterInterval"
	case EffectFail:
		return "Fail"
	}
	return fmt.Sprintf("Effect(%d)", int(e))
}

// ReasonMultipleErrors is the Reason of the error Summarize returns for several unrelated errors.
const ReasonMultipleErrors = "MultipleErrors"

// UpdateError is an error applying a payload, in a form a human can act on. Appliers return
// it to stop retries and to classify a failure (with an Effect and a plural form, so that
// Summarize can condense the same failure of several objects of a kind into one message).
type UpdateError struct {
	// Nested is the cause.
	Nested error
	// Effect is how much the error weighs on the update.
	Effect Effect
	// Reason is a CamelCase classification, e.g. "UpdatePayloadResourceNotFound".
	Reason string
	// PluralReason replaces Reason when several errors are condensed.
	PluralReason string
	// Message is the human message and the Error() text.
	Message string
	// PluralMessageFormat is a fmt format with one %s for the comma separated Names,
	// e.g. "Cluster operators %s are updating versions".
	PluralMessageFormat string
	// Name is the object the error is about, or the joined Names of a condensed error.
	Name string
	// Names are the objects of a condensed error, sorted.
	Names []string
	// Task is the task that failed, if known.
	Task *Task
}

// Error returns Message.
func (e *UpdateError) Error() string { return e.Message }

// Unwrap returns Nested.
func (e *UpdateError) Unwrap() error { return e.Nested }

// ReasonForError classifies an apply error with a Reason and a short cause for messages.
// NotFound has its own reason.
func ReasonForError(err error) (reason, cause string) {
	switch {
	case apierrors.IsNotFound(err):
		return "UpdatePayloadResourceNotFound", "resource may have been deleted"
	case apierrors.IsAlreadyExists(err):
		return "UpdatePayloadResourceAlreadyExists", "resource was created by someone else"
	case apierrors.IsConflict(err):
		return "UpdatePayloadResourceConflict", "someone else is updating this resource"
	case apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return "UpdatePayloadClusterDown", "the server is down or not responding"
	case apierrors.IsInternalError(err):
		return "UpdatePayloadClusterError", "the server is reporting an internal error"
	case apierrors.IsInvalid(err):
		return "UpdatePayloadResourceInvalid", "the object is invalid, possibly due to local cluster configuration"
	case apierrors.IsUnauthorized(err):
		return "UpdatePayloadClusterUnauthorized", "could not authenticate to the server"
	case apierrors.IsForbidden(err):
		return "UpdatePayloadResourceForbidden", "the server has forbidden updates to this resource"
	case apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err):
		return "UpdatePayloadClusterOverloaded", "the server is overloaded and is not accepting updates"
	case meta.IsNoMatchError(err):
		return "UpdatePayloadResourceTypeMissing", "the server does not recognize this resource, check extension API servers"
	case IsContextError(err):
		return "UpdatePayloadInterrupted", "the apply was interrupted"
	}
	return "UpdatePayloadFailed", ""
}

// IsContextError reports whether err is, or wraps, context.Canceled or context.DeadlineExceeded.
func IsContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// EffectOf returns the effect of err: an *UpdateError's own effect, EffectFail for any
// other error, EffectReport for nil.
func EffectOf(err error) Effect {
	if err == nil {
		return EffectReport
	}
	var uErr *UpdateError
	if errors.As(err, &uErr) {
		return uErr.Effect
	}
	return EffectFail
}

// Summarize reduces the errors of a graph run to one error a human can act on, or nil.
// Context errors (also wrapped ones) are dropped. UpdateErrors about the same kind with
// the same Reason and a PluralMessageFormat are condensed into one error naming every
// object, with the strongest Effect. One remaining error is returned as is; several
// become an *UpdateError with Reason ReasonMultipleErrors, the strongest Effect and a
// message of sorted, de-duplicated bullets.
func Summarize(errs []error) error {
	kept := make([]error, 0, len(errs))
	for _, err := range errs {
		if err != nil && !IsContextError(err) {
			kept = append(kept, err)
		}
	}
	kept = condense(kept)
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	messages := make([]string, 0, len(kept))
	effect := EffectReport
	for _, err := range kept {
		messages = append(messages, err.Error())
		effect = max(effect, EffectOf(err))
	}
	slices.Sort(messages)
	messages = slices.Compact(messages)
	if len(messages) == 1 {
		return kept[0]
	}
	return &UpdateError{
		Nested:  errors.Join(kept...),
		Effect:  effect,
		Reason:  ReasonMultipleErrors,
		Message: "Multiple errors are preventing progress:\n* " + strings.Join(messages, "\n* "),
	}
}

type condenseKey struct {
	kind   schema.GroupKind
	reason string
}

// condense merges UpdateErrors of one kind and reason that carry a plural form. The
// merged error takes the place of the first error of its group.
func condense(errs []error) []error {
	groups := map[condenseKey][]*UpdateError{}
	for _, err := range errs {
		if key, uErr, ok := condensable(err); ok {
			groups[key] = append(groups[key], uErr)
		}
	}
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		key, _, ok := condensable(err)
		if !ok || len(groups[key]) == 1 {
			out = append(out, err)
			continue
		}
		group := groups[key]
		if group == nil {
			continue
		}
		out = append(out, condenseGroup(group))
		groups[key] = nil
	}
	return out
}

func condensable(err error) (condenseKey, *UpdateError, bool) {
	uErr, ok := err.(*UpdateError)
	if !ok || uErr.PluralMessageFormat == "" || uErr.Task == nil || uErr.Task.Manifest == nil {
		return condenseKey{}, nil, false
	}
	return condenseKey{kind: uErr.Task.Manifest.GVK.GroupKind(), reason: uErr.Reason}, uErr, true
}

func condenseGroup(group []*UpdateError) *UpdateError {
	nested := make([]error, 0, len(group))
	names := make([]string, 0, len(group))
	effect := EffectReport
	for _, e := range group {
		nested = append(nested, e)
		name := e.Name
		if name == "" {
			name = e.Task.Manifest.Name()
		}
		names = append(names, name)
		effect = max(effect, e.Effect)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	name := strings.Join(names, ", ")
	first := group[0]
	reason := first.PluralReason
	if reason == "" {
		reason = first.Reason
	}
	return &UpdateError{
		Nested:              errors.Join(nested...),
		Effect:              effect,
		Reason:              reason,
		PluralReason:        reason,
		Message:             fmt.Sprintf(first.PluralMessageFormat, name),
		PluralMessageFormat: first.PluralMessageFormat,
		Name:                name,
		Names:               names,
	}
}

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

// Effect is how much an UpdateError weighs on the update; effects are ordered
// Report < None < FailAfterInterval < Fail.
type Effect string

const (
	// EffectReport errors are reported in Status.Failure but neither stop their
	// manifest's dependents nor fail the apply.
	EffectReport Effect = "Report"
	// EffectNone errors stop their manifest's dependents and the apply is retried, but
	// the update is only waiting: the Failing condition stays False and Progressing
	// says what the update waits on.
	EffectNone Effect = "None"
	// EffectFailAfterInterval errors are like EffectNone until the update has made no
	// progress for Policy.Interval; then Failing is True.
	EffectFailAfterInterval Effect = "FailAfterInterval"
	// EffectFail errors fail the update at once (Failing is True). It is the effect of
	// every error that is not an *UpdateError.
	EffectFail Effect = "Fail"
)

// rank orders effects; an unknown effect weighs as EffectFail.
func (e Effect) rank() int {
	switch e {
	case EffectReport:
		return 0
	case EffectNone:
		return 1
	case EffectFailAfterInterval:
		return 2
	}
	return 3
}

// stronger returns the effect of the two that weighs more.
func stronger(a, b Effect) Effect {
	if b.rank() > a.rank() {
		return b
	}
	return a
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

// reasonForError classifies an apply error as the cluster-version operator does
// (pkg/payload/task.go, reasonForPayloadSyncError): a Reason, and the operator's words
// for the cause where it has them, "" where it has none.
func reasonForError(err error) (reason, cause string) {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsAlreadyExists(err):
		return "UpdatePayloadResourceNotFound", "resource may have been deleted"
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
	case isContextError(err):
		return "UpdatePayloadInterrupted", ""
	}
	return "UpdatePayloadFailed", ""
}

// isContextError reports whether err is, or wraps, context.Canceled or context.DeadlineExceeded.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// effectOf returns the effect of err: an *UpdateError's own effect, EffectFail for any
// other error, EffectReport for nil.
func effectOf(err error) Effect {
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
// message of sorted, de-duplicated bullets. Errors that all have the same text are one
// error: the first of those with the strongest effect.
func Summarize(errs []error) error {
	kept := make([]error, 0, len(errs))
	for _, err := range errs {
		if err != nil && !isContextError(err) {
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
		effect = stronger(effect, effectOf(err))
	}
	slices.Sort(messages)
	messages = slices.Compact(messages)
	if len(messages) == 1 {
		return strongest(kept)
	}
	return &UpdateError{
		Nested:  errors.Join(kept...),
		Effect:  effect,
		Reason:  ReasonMultipleErrors,
		Message: "Multiple errors are preventing progress:\n* " + strings.Join(messages, "\n* "),
	}
}

// strongest returns the first error of errs with the strongest effect.
func strongest(errs []error) error {
	best := errs[0]
	for _, err := range errs[1:] {
		if effectOf(err).rank() > effectOf(best).rank() {
			best = err
		}
	}
	return best
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
		effect = stronger(effect, e.Effect)
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

// asUpdateError returns the *UpdateError in err's chain, nil when there is none.
func asUpdateError(err error) *UpdateError {
	var uErr *UpdateError
	if errors.As(err, &uErr) {
		return uErr
	}
	return nil
}

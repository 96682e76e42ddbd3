package payload

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/converge-dev/converge/payload/graph"
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

// UpdateError is an error applying a payload, in a form a human can act on. Appliers
// return it to stop retries and to classify a failure, with an Effect and a plural
// form: the worker condenses the same failure of several objects of a kind, with a
// PluralMessageFormat, into one message naming them all, and several unrelated
// failures into one of reason ReasonMultipleErrors, a bullet each.
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
	// Task is the task that failed, if known; the worker fills it in. Its Item is the
	// *manifest.Manifest the error is about.
	Task *graph.Task
}

// Error returns Message.
func (e *UpdateError) Error() string { return e.Message }

// Unwrap returns Nested.
func (e *UpdateError) Unwrap() error { return e.Nested }

// errorClass is a class of API errors the cluster-version operator names: the
// predicates of its errors, its reason and the operator's words for its cause, "" where
// it has none.
type errorClass struct {
	is     []func(error) bool
	reason string
	cause  string
}

// errorClasses are the cluster-version operator's classes of apply errors
// (pkg/payload/task.go, reasonForPayloadSyncError), in the order it tries them.
var errorClasses = []errorClass{
	{[]func(error) bool{apierrors.IsNotFound, apierrors.IsAlreadyExists}, "UpdatePayloadResourceNotFound", "resource may have been deleted"},
	{[]func(error) bool{apierrors.IsConflict}, "UpdatePayloadResourceConflict", "someone else is updating this resource"},
	{[]func(error) bool{apierrors.IsTimeout, apierrors.IsServiceUnavailable, apierrors.IsUnexpectedServerError}, "UpdatePayloadClusterDown", "the server is down or not responding"},
	{[]func(error) bool{apierrors.IsInternalError}, "UpdatePayloadClusterError", "the server is reporting an internal error"},
	{[]func(error) bool{apierrors.IsInvalid}, "UpdatePayloadResourceInvalid", "the object is invalid, possibly due to local cluster configuration"},
	{[]func(error) bool{apierrors.IsUnauthorized}, "UpdatePayloadClusterUnauthorized", "could not authenticate to the server"},
	{[]func(error) bool{apierrors.IsForbidden}, "UpdatePayloadResourceForbidden", "the server has forbidden updates to this resource"},
	{[]func(error) bool{apierrors.IsServerTimeout, apierrors.IsTooManyRequests}, "UpdatePayloadClusterOverloaded", "the server is overloaded and is not accepting updates"},
	{[]func(error) bool{meta.IsNoMatchError}, "UpdatePayloadResourceTypeMissing", "the server does not recognize this resource, check extension API servers"},
	{[]func(error) bool{isContextError}, "UpdatePayloadInterrupted", ""},
}

// reasonForError classifies an apply error as the cluster-version operator does: the
// reason and cause of the first class (errorClasses) err belongs to, else
// ReasonUpdatePayloadFailed and no cause.
func reasonForError(err error) (reason, cause string) {
	for _, c := range errorClasses {
		for _, is := range c.is {
			if is(err) {
				return c.reason, c.cause
			}
		}
	}
	return ReasonUpdatePayloadFailed, ""
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

// asUpdateError returns the *UpdateError in err's chain, nil when there is none.
func asUpdateError(err error) *UpdateError {
	var uErr *UpdateError
	if errors.As(err, &uErr) {
		return uErr
	}
	return nil
}

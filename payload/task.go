package payload

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// State is what the worker is doing with a payload; appliers receive it with every manifest.
type State string

const (
	// StateInitializing creates a payload on a fresh cluster: every component at once.
	StateInitializing State = "Initializing"
	// StateUpdating moves the cluster to a new payload, in run-level order, waiting for
	// every manifest to be ready before the next run level.
	StateUpdating State = "Updating"
	// StateReconciling re-applies the payload the cluster already runs, to undo drift.
	StateReconciling State = "Reconciling"
)

// known reports whether s is one of the states, or empty.
func (s State) known() bool {
	switch s {
	case "", StateInitializing, StateUpdating, StateReconciling:
		return true
	}
	return false
}

// Task is one manifest to apply, with its place in the payload.
type Task struct {
	// Index is the 1-based position of the manifest in the payload.
	Index int
	// Total is the number of manifests in the payload.
	Total int
	// Manifest is what to apply.
	Manifest *Manifest
}

// NewTasks makes one task per manifest, numbered 1..len(manifests).
func NewTasks(manifests []Manifest) []*Task {
	tasks := make([]*Task, len(manifests))
	all := make([]Task, len(manifests))
	for i := range manifests {
		all[i] = Task{Index: i + 1, Total: len(manifests), Manifest: &manifests[i]}
		tasks[i] = &all[i]
	}
	return tasks
}

// String names the task in messages: `deployment "ns/name" (3 of 10)`.
func (t *Task) String() string {
	if t == nil {
		return "task (0 of 0)"
	}
	if t.Manifest == nil {
		return fmt.Sprintf("task (%d of %d)", t.Index, t.Total)
	}
	return fmt.Sprintf("%s (%d of %d)", t.Manifest.resourceID(), t.Index, t.Total)
}

// file returns the task's file name, "" when it has none.
func (t *Task) file() string {
	if t == nil || t.Manifest == nil {
		return ""
	}
	return t.Manifest.File
}

// retry calls attempt up to p.ManifestAttempts times, spaced by p.ManifestBackoff on
// clk with jitter's draws, until it succeeds. It stops at once when attempt returns an *UpdateError (its
// Task is filled in when empty), when ctx ends, or when the kind has no resource on the
// server (meta.IsNoMatchError): a CRD of the payload may register it, which takes more
// than an attempt's backoff, so the apply fails at once and says which kind, and a
// later apply tries again. When the attempts run out, or ctx ends after a failed
// attempt, the last error is returned as an *UpdateError "Could not <verb> <kind>
// "ns/name" (i of n): <the cluster-version operator's words>: <error>" whose Reason
// classifies it, as the operator does; when ctx ended before any attempt, ctx's error.
func (t *Task) retry(ctx context.Context, clk clock.WithDelayedExecution, p Policy, jitter func() float64, verb string, attempt func() error) error {
	var lastErr error
	for n := int32(1); ; n++ {
		if err := ctx.Err(); err != nil {
			return t.failure(verb, lastErr, err)
		}
		err := attempt()
		if err == nil {
			return nil
		}
		lastErr = err
		klog.FromContext(ctx).V(2).Info("Attempt failed", "verb", verb, "task", t.String(), "err", err)
		if uErr := asUpdateError(err); uErr != nil {
			if uErr.Task == nil {
				uErr.Task = t
			}
			return err
		}
		if n >= p.ManifestAttempts || meta.IsNoMatchError(err) {
			return t.failure(verb, lastErr, nil)
		}
		if !sleep(ctx, clk, p.ManifestBackoff.Delay(n, jitter())) {
			return t.failure(verb, lastErr, ctx.Err())
		}
	}
}

// sleep waits d on clk; it returns false when ctx ends first.
func sleep(ctx context.Context, clk clock.WithDelayedExecution, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := clk.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return ctx.Err() == nil // an end that comes with the timer wins, whatever select picked
	}
}

// failure wraps the last error, or returns ctxErr when nothing was attempted.
func (t *Task) failure(verb string, lastErr, ctxErr error) error {
	if lastErr == nil {
		return ctxErr
	}
	reason, cause := reasonForError(lastErr)
	msg := fmt.Sprintf("Could not %s %s: %v", verb, t, lastErr)
	if cause != "" {
		msg = fmt.Sprintf("Could not %s %s: %s: %v", verb, t, cause, lastErr)
	}
	return &UpdateError{Nested: lastErr, Effect: EffectFail, Reason: reason, Message: msg, Task: t}
}

// awaitReady polls ready until the task's object is ready, ready returns an
// *UpdateError, ctx ends or p.ReadinessTimeout passes: then the error has
// p.ReadinessEffect and says what the object waited on. No check starts once ctx has
// ended, so that a replaced release stops before its next host call.
func (t *Task) awaitReady(ctx context.Context, clk clock.WithDelayedExecution, p Policy, ready func() error) error {
	deadline := clk.Now().Add(p.ReadinessTimeout.Duration)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := ready()
		if err == nil {
			return nil
		}
		if uErr := asUpdateError(err); uErr != nil {
			if uErr.Task == nil {
				uErr.Task = t
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !clk.Now().Before(deadline) {
			return &UpdateError{
				Nested: err, Effect: p.ReadinessEffect, Reason: "ManifestNotReady", Task: t,
				Message: fmt.Sprintf("Timed out after %s waiting for %s to be ready: %v", p.ReadinessTimeout.Duration, t, err),
			}
		}
		if !sleep(ctx, clk, min(p.ReadinessPoll.Duration, deadline.Sub(clk.Now()))) {
			return ctx.Err()
		}
	}
}

// isGone reports whether a delete error says the object is already gone.
func isGone(err error) bool { return apierrors.IsNotFound(err) }

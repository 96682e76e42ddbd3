package payload

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// State is what the worker is doing with a payload; appliers receive it with every manifest.
type State string

const (
	// StateInitializing creates a payload on a fresh cluster: everything in parallel.
	StateInitializing State = "Initializing"
	// StateUpdating moves the cluster to a new payload, in run-level order.
	StateUpdating State = "Updating"
	// StateReconciling re-applies the payload the cluster already runs, to undo drift.
	StateReconciling State = "Reconciling"
)

// Applier applies one manifest to the cluster in the given state. It returns an
// *UpdateError to stop Task.Run from retrying.
type Applier interface {
	Apply(ctx context.Context, m *Manifest, state State) error
}

// ApplierFunc adapts a function to Applier.
type ApplierFunc func(ctx context.Context, m *Manifest, state State) error

// Apply calls f.
func (f ApplierFunc) Apply(ctx context.Context, m *Manifest, state State) error {
	return f(ctx, m, state)
}

var _ Applier = ApplierFunc(nil)

// Task is one manifest to apply, with its place in the payload and its retry policy.
type Task struct {
	// Index is the 1-based position of the manifest in the payload.
	Index int
	// Total is the number of manifests in the payload.
	Total int
	// Manifest is what to apply.
	Manifest *Manifest
	// Backoff spaces the attempts of Run; Steps is the number of attempts and must be at least 1.
	Backoff wait.Backoff
}

// NewTasks makes one task per manifest, numbered 1..len(manifests), each with backoff.
func NewTasks(manifests []Manifest, backoff wait.Backoff) []*Task {
	tasks := make([]*Task, len(manifests))
	all := make([]Task, len(manifests))
	for i := range manifests {
		all[i] = Task{Index: i + 1, Total: len(manifests), Manifest: &manifests[i], Backoff: backoff}
		tasks[i] = &all[i]
	}
	return tasks
}

// String names the task in messages: `deployment "ns/name" (3 of 10)`.
func (t *Task) String() string {
	if t == nil || t.Manifest == nil {
		return fmt.Sprintf("task (%d of %d)", t.index(), t.total())
	}
	return fmt.Sprintf("%s (%d of %d)", t.Manifest.resourceID(), t.Index, t.Total)
}

func (t *Task) index() int {
	if t == nil {
		return 0
	}
	return t.Index
}

func (t *Task) total() int {
	if t == nil {
		return 0
	}
	return t.Total
}

// file returns the task's file name, "" when it has none.
func (t *Task) file() string {
	if t == nil || t.Manifest == nil {
		return ""
	}
	return t.Manifest.File
}

// Run applies the task's manifest until the applier succeeds, retrying with the task's
// Backoff (timed by clk; nil means the real clock). It stops at once when the applier
// returns an *UpdateError (its Task is filled in when empty) or when ctx ends. When the
// attempts run out, or ctx ends after a failed attempt, the last error is returned as an
// *UpdateError "Could not update <kind> "ns/name" (i of n)" whose Reason classifies it.
// A Backoff with fewer than one step is a configuration error wrapping ErrInvalid.
func (t *Task) Run(ctx context.Context, clk clock.Clock, applier Applier, state State) error {
	if t == nil || t.Manifest == nil {
		return fmt.Errorf("payload: Run: task has no manifest: %w", ErrInvalid)
	}
	if applier == nil {
		return fmt.Errorf("payload: Run %s: nil Applier: %w", t, ErrInvalid)
	}
	if t.Backoff.Steps < 1 {
		return fmt.Errorf("payload: Run %s: backoff needs at least one step, got %d: %w", t, t.Backoff.Steps, ErrInvalid)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	logger := klog.FromContext(ctx)
	backoff := t.Backoff
	var lastErr error
	for {
		if err := ctx.Err(); err != nil {
			return t.failure(lastErr, err)
		}
		err := applier.Apply(ctx, t.Manifest, state)
		if err == nil {
			return nil
		}
		lastErr = err
		logger.V(2).Info("Apply failed", "task", t.String(), "err", err)
		var uErr *UpdateError
		if errors.As(err, &uErr) {
			if uErr.Task == nil {
				uErr.Task = t
			}
			return err
		}
		delay := backoff.Step()
		if backoff.Steps < 1 {
			return t.failure(lastErr, nil)
		}
		if delay > 0 {
			timer := clk.NewTimer(delay)
			select {
			case <-ctx.Done():
				timer.Stop()
				return t.failure(lastErr, ctx.Err())
			case <-timer.C():
			}
		}
	}
}

// failure wraps the last apply error, or returns ctxErr when nothing was attempted.
func (t *Task) failure(lastErr, ctxErr error) error {
	if lastErr == nil {
		return ctxErr
	}
	reason, cause := ReasonForError(lastErr)
	msg := "Could not update " + t.String()
	if cause != "" {
		msg += ": " + cause
	}
	return &UpdateError{Nested: lastErr, Effect: EffectFail, Reason: reason, Message: msg, Task: t}
}

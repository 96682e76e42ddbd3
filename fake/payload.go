package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// PayloadOutcome scripts calls of PayloadApplier.Apply and Delete for one manifest
// (PayloadApplier.Push): an error some number of times or for good, a call that
// blocks until its context ends, a panic.
type PayloadOutcome struct {
	// Err is returned by the call.
	Err error
	// Times is how many calls this outcome answers; 0 means every remaining call.
	Times int
	// Block makes the call wait until its context ends and return ctx.Err().
	Block bool
	// Panic, when not nil, makes the call panic with this value.
	Panic any
}

// PayloadApply is one recorded Apply call.
type PayloadApply struct {
	// Ref is the manifest's reference (manifest.Manifest.Ref).
	Ref string
	// File is the manifest's file name.
	File string
	// State is the state the worker applied in; empty for a deletion.
	State payload.State
	// Delete is true for a call of Delete.
	Delete bool
}

// PayloadApplier is a scripted payload.Applier and payload.Deleter. A call takes the
// first outcome queued for its manifest's Ref in Script; without one it succeeds. Every call is recorded in
// Calls, and MaxConcurrent is the highest number of calls it saw running at once. Safe
// for concurrent use; read the fields with Recorded and Concurrency while calls may
// still run.
type PayloadApplier struct {
	mu sync.Mutex
	// Script holds the queued outcomes per manifest reference, consumed in order.
	Script map[string][]PayloadOutcome
	// Calls records every call in order of arrival.
	Calls []PayloadApply
	// MaxConcurrent is the highest number of calls running at once.
	MaxConcurrent int
	// OnApply, when set, is called at the start of every call, outside the lock.
	OnApply func(PayloadApply)

	running int
}

var (
	_ payload.Applier = (*PayloadApplier)(nil)
	_ payload.Deleter = (*PayloadApplier)(nil)
)

// Push queues outcomes for the manifest with reference ref.
func (a *PayloadApplier) Push(ref string, outcomes ...PayloadOutcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Script == nil {
		a.Script = map[string][]PayloadOutcome{}
	}
	a.Script[ref] = append(a.Script[ref], outcomes...)
}

// Apply records the call and plays the scripted outcome.
func (a *PayloadApplier) Apply(ctx context.Context, m *manifest.Manifest, state payload.State) error {
	return a.play(ctx, PayloadApply{Ref: m.Ref(), File: m.File, State: state})
}

// Delete records the call and plays the scripted outcome.
func (a *PayloadApplier) Delete(ctx context.Context, m *manifest.Manifest) error {
	return a.play(ctx, PayloadApply{Ref: m.Ref(), File: m.File, Delete: true})
}

func (a *PayloadApplier) play(ctx context.Context, call PayloadApply) error {
	a.mu.Lock()
	a.Calls = append(a.Calls, call)
	a.running++
	a.MaxConcurrent = max(a.MaxConcurrent, a.running)
	outcome := a.next(call.Ref)
	hook := a.OnApply
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running--
		a.mu.Unlock()
	}()
	if hook != nil {
		hook(call)
	}
	switch {
	case outcome.Panic != nil:
		panic(outcome.Panic)
	case outcome.Block:
		<-ctx.Done()
		return ctx.Err()
	}
	return outcome.Err
}

// next pops the outcome for ref; the caller holds the lock.
func (a *PayloadApplier) next(ref string) PayloadOutcome {
	queue := a.Script[ref]
	if len(queue) == 0 {
		return PayloadOutcome{}
	}
	outcome := queue[0]
	switch {
	case outcome.Times == 1:
		a.Script[ref] = queue[1:]
	case outcome.Times > 1:
		queue[0].Times--
	}
	return outcome
}

// Recorded returns a copy of Calls.
func (a *PayloadApplier) Recorded() []PayloadApply {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]PayloadApply(nil), a.Calls...)
}

// Count returns how many calls for ref were recorded.
func (a *PayloadApplier) Count(ref string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.Calls {
		if c.Ref == ref {
			n++
		}
	}
	return n
}

// Concurrency returns MaxConcurrent.
func (a *PayloadApplier) Concurrency() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.MaxConcurrent
}

// PayloadLoader is a payload.Loader serving payloads from a map. A call first takes an
// error queued in Errs for the release, then returns the release's payload from
// Payloads, or an error when there is none. Every call is recorded in Calls. Safe for
// concurrent use.
type PayloadLoader struct {
	mu sync.Mutex
	// Payloads are the payloads by release.
	Payloads map[payload.Release]*payload.Payload
	// Errs holds queued errors per release, consumed in order.
	Errs map[payload.Release][]error
	// Calls records every requested release in order.
	Calls []payload.Release
}

var _ payload.Loader = (*PayloadLoader)(nil)

// Add serves p for its release.
func (l *PayloadLoader) Add(p *payload.Payload) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Payloads == nil {
		l.Payloads = map[payload.Release]*payload.Payload{}
	}
	l.Payloads[identity(p.Release)] = p
}

// identity is a release without its force flag, which is not part of its identity.
func identity(r payload.Release) payload.Release {
	r.Force = false
	return r
}

// FailNext queues errs for the next loads of release.
func (l *PayloadLoader) FailNext(release payload.Release, errs ...error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Errs == nil {
		l.Errs = map[payload.Release][]error{}
	}
	l.Errs[release] = append(l.Errs[release], errs...)
}

// Load records the call and serves the payload.
func (l *PayloadLoader) Load(_ context.Context, desired payload.Release) (*payload.Payload, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Calls = append(l.Calls, desired)
	if errs := l.Errs[desired]; len(errs) > 0 {
		l.Errs[desired] = errs[1:]
		return nil, errs[0]
	}
	p, ok := l.Payloads[identity(desired)]
	if !ok {
		return nil, fmt.Errorf("fake: no payload for %s", desired)
	}
	return p, nil
}

// Recorded returns a copy of Calls.
func (l *PayloadLoader) Recorded() []payload.Release {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]payload.Release(nil), l.Calls...)
}

// PayloadReadiness is a scripted payload.Readiness: a manifest is ready once the checks
// queued for its Ref in NotReady have been answered, each with an error saying what it
// waits on. Checks records every checked Ref. Safe for concurrent use.
type PayloadReadiness struct {
	mu sync.Mutex
	// NotReady is how many more checks of a Ref answer "not ready".
	NotReady map[string]int
	// Checks records every checked Ref in order.
	Checks []string
}

var _ payload.Readiness = (*PayloadReadiness)(nil)

// NotReadyFor makes the next n checks of ref answer "not ready".
func (r *PayloadReadiness) NotReadyFor(ref string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.NotReady == nil {
		r.NotReady = map[string]int{}
	}
	r.NotReady[ref] += n
}

// Ready records the check and answers it.
func (r *PayloadReadiness) Ready(_ context.Context, m *manifest.Manifest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := m.Ref()
	r.Checks = append(r.Checks, ref)
	if r.NotReady[ref] > 0 {
		r.NotReady[ref]--
		return fmt.Errorf("fake: %s is not ready yet", ref)
	}
	return nil
}

// Recorded returns a copy of Checks.
func (r *PayloadReadiness) Recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.Checks...)
}

// PayloadStatusStore is a payload.StatusWriter that keeps the last status written. A
// write first takes an error queued in Errs. Safe for concurrent use.
type PayloadStatusStore struct {
	mu sync.Mutex
	// Status is the last status written.
	Status payload.Status
	// Writes counts the successful writes.
	Writes int
	// Errs holds errors for the next writes, consumed in order.
	Errs []error
}

var _ payload.StatusWriter = (*PayloadStatusStore)(nil)

// WriteStatus stores s, or fails with the next queued error.
func (s *PayloadStatusStore) WriteStatus(_ context.Context, status payload.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Errs) > 0 {
		err := s.Errs[0]
		s.Errs = s.Errs[1:]
		return err
	}
	s.Status = *status.DeepCopy()
	s.Writes++
	return nil
}

// Current returns a copy of the last status written.
func (s *PayloadStatusStore) Current() payload.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.Status.DeepCopy()
}

package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-dev/converge/payload"
)

// PayloadOutcome scripts calls of PayloadApplier.Apply for one manifest.
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
	// Ref is the manifest's reference (payload.Manifest.Ref).
	Ref string
	// File is the manifest's file name.
	File string
	// State is the state the worker applied in.
	State payload.State
}

// PayloadApplier is a scripted payload.Applier. A call takes the first outcome queued
// for its manifest's Ref in Script; without one it succeeds. Every call is recorded in
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

var _ payload.Applier = (*PayloadApplier)(nil)

// Push queues outcomes for the manifest with reference ref.
func (a *PayloadApplier) Push(ref string, outcomes ...PayloadOutcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Script == nil {
		a.Script = map[string][]PayloadOutcome{}
	}
	a.Script[ref] = append(a.Script[ref], outcomes...)
}

// FailTimes makes the next n calls for ref fail with err.
func (a *PayloadApplier) FailTimes(ref string, n int, err error) {
	if n > 0 {
		a.Push(ref, PayloadOutcome{Err: err, Times: n})
	}
}

// FailForever makes every call for ref fail with err.
func (a *PayloadApplier) FailForever(ref string, err error) {
	a.Push(ref, PayloadOutcome{Err: err})
}

// BlockUntilCancelled makes every call for ref wait until its context ends.
func (a *PayloadApplier) BlockUntilCancelled(ref string) {
	a.Push(ref, PayloadOutcome{Block: true})
}

// PanicWith makes the next call for ref panic with v.
func (a *PayloadApplier) PanicWith(ref string, v any) {
	a.Push(ref, PayloadOutcome{Panic: v, Times: 1})
}

// Apply records the call and plays the scripted outcome.
func (a *PayloadApplier) Apply(ctx context.Context, m *payload.Manifest, state payload.State) error {
	call := PayloadApply{Ref: m.Ref(), File: m.File, State: state}
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

// PayloadLoader is a payload.PayloadLoader (a payload retriever) serving payloads from a
// map. A call first takes an error queued in Errs for the release, then returns the
// release's payload from Payloads, or an error when there is none. Every call is
// recorded in Calls. Safe for concurrent use.
type PayloadLoader struct {
	mu sync.Mutex
	// Payloads are the payloads by release.
	Payloads map[payload.Release]*payload.Payload
	// Errs holds queued errors per release, consumed in order.
	Errs map[payload.Release][]error
	// Calls records every requested release in order.
	Calls []payload.Release
}

var _ payload.PayloadLoader = (*PayloadLoader)(nil)

// Add serves p for its release.
func (l *PayloadLoader) Add(p *payload.Payload) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Payloads == nil {
		l.Payloads = map[payload.Release]*payload.Payload{}
	}
	l.Payloads[p.Release] = p
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

// LoadPayload records the call and serves the payload.
func (l *PayloadLoader) LoadPayload(_ context.Context, desired payload.Release) (*payload.Payload, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Calls = append(l.Calls, desired)
	if errs := l.Errs[desired]; len(errs) > 0 {
		l.Errs[desired] = errs[1:]
		return nil, errs[0]
	}
	p, ok := l.Payloads[desired]
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

package testenv

import (
	"context"
	"sync"
)

// identity is one instance of the operator under test, as the proxy knows
// it.
type identity struct {
	name   string
	token  string
	number int // in the order registered, for file names

	// Guarded by the proxy's mu.
	mutations  int // mutating requests sent
	crashAfter int // cut off after this many; 0: not set
	cutOff     bool

	ctx       context.Context // ends when cut off, ending its requests
	cutCancel context.CancelFunc
	crashed   chan struct{}
	crashOnce sync.Once
}

// register returns the identity of that name, registering it at its first
// use.
func (p *FaultProxy) register(name string) *identity {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.byName[name]; ok {
		return id
	}
	id := &identity{name: name, token: newToken(), number: len(p.byName) + 1, crashed: make(chan struct{})}
	id.ctx, id.cutCancel = context.WithCancel(context.Background())
	p.byName[name] = id
	p.identities[id.token] = id
	return id
}

// CrashAfter cuts the instance identity off right after its n-th mutating
// request (create, update, patch, delete, deletecollection), counted from
// its first, has been answered: the proxy then refuses every later request
// of identity with 503 and ends its open watches, so that goroutines of
// the instance still running can no longer read or write, and the test
// starts a fresh instance under a new identity, from what the cluster
// holds. An identity that has sent n or more is cut off at once, as is
// every identity for n <= 0.
func (p *FaultProxy) CrashAfter(identity string, n int) {
	if p == nil || p.server == nil {
		return
	}
	id := p.register(identity)
	p.mu.Lock()
	now := n <= 0 || id.mutations >= n
	if !now {
		id.crashAfter = n
	}
	p.mu.Unlock()
	if now {
		p.cutOff(id)
	}
}

// Crash cuts the instance identity off at once, as CrashAfter does.
func (p *FaultProxy) Crash(identity string) { p.CrashAfter(identity, 0) }

// Crashed returns a channel that is closed once identity is cut off, by
// CrashAfter, Crash or a Crash fault: then the test stops that instance
// and starts a fresh one. It is nil for a FaultProxy not made by
// NewFaultProxy.
func (p *FaultProxy) Crashed(identity string) <-chan struct{} {
	if p == nil || p.server == nil {
		return nil
	}
	return p.register(identity).crashed
}

// cutOff refuses every later request of id and ends those in flight; the
// first time, it counts a Crash.
func (p *FaultProxy) cutOff(id *identity) {
	p.mu.Lock()
	id.cutOff = true
	p.mu.Unlock()
	id.crashOnce.Do(func() {
		p.count(Crash)
		id.cutCancel()
		close(id.crashed)
	})
}

// admit counts a request of id and says whether it may pass and whether
// id is cut off once it has been answered.
func (p *FaultProxy) admit(id *identity, r request, isResource bool) (pass, cutAfter bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id.cutOff {
		return false, false
	}
	if !isResource || !r.mutating() {
		return true, false
	}
	id.mutations++
	switch {
	case id.crashAfter > 0 && id.mutations > id.crashAfter:
		return false, false
	case id.crashAfter > 0 && id.mutations == id.crashAfter:
		return true, true
	}
	return true, false
}

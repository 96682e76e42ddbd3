package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/converge-dev/converge/addon"
)

// AddonMethod names a method of addon.Driver.
type AddonMethod string

// The addon.Driver methods.
const (
	AddonInstall   AddonMethod = "Install"
	AddonUpgrade   AddonMethod = "Upgrade"
	AddonUninstall AddonMethod = "Uninstall"
	AddonHealth    AddonMethod = "Health"
)

// AddonOutcome scripts one Driver call.
type AddonOutcome struct {
	// Err is returned by the call.
	Err error
	// Hang blocks the call until its context ends, then returns ctx.Err():
	// an action that never finishes before its deadline.
	Hang bool
	// Health is what a Health call reports; "" means addon.HealthHealthy.
	Health addon.Health
}

// AddonCall is one recorded Driver call.
type AddonCall struct {
	Method AddonMethod
	// Name and Version are the spec's.
	Name    string
	Version string
	// From and To are the versions of an Upgrade (a rollback too).
	From, To string
}

// AddonDriver is a scripted addon.Driver. Each method takes the next outcome
// from its queue in Script; with an empty queue it succeeds (Health reports
// healthy). Every call is recorded in Calls. Safe for concurrent use; read
// Calls with Recorded while calls may still run.
type AddonDriver struct {
	mu sync.Mutex
	// Script holds the queued outcomes per method, consumed in order.
	Script map[AddonMethod][]AddonOutcome
	// Calls records every call in order.
	Calls []AddonCall
}

var _ addon.Driver = (*AddonDriver)(nil)

// Push queues outcomes for method m.
func (d *AddonDriver) Push(m AddonMethod, outcomes ...AddonOutcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Script == nil {
		d.Script = map[AddonMethod][]AddonOutcome{}
	}
	d.Script[m] = append(d.Script[m], outcomes...)
}

// Recorded returns a copy of Calls.
func (d *AddonDriver) Recorded() []AddonCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]AddonCall(nil), d.Calls...)
}

// Count returns how many calls of method m were recorded.
func (d *AddonDriver) Count(m AddonMethod) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.Calls {
		if c.Method == m {
			n++
		}
	}
	return n
}

func (d *AddonDriver) take(c AddonCall) AddonOutcome {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Calls = append(d.Calls, c)
	q := d.Script[c.Method]
	if len(q) == 0 {
		return AddonOutcome{}
	}
	d.Script[c.Method] = q[1:]
	return q[0]
}

func (o AddonOutcome) result(ctx context.Context) error {
	if o.Hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return o.Err
}

// Install records the call and returns the next scripted outcome.
func (d *AddonDriver) Install(ctx context.Context, spec addon.Spec) error {
	return d.take(AddonCall{Method: AddonInstall, Name: spec.Name, Version: spec.Version}).result(ctx)
}

// Upgrade records the call and returns the next scripted outcome.
func (d *AddonDriver) Upgrade(ctx context.Context, spec addon.Spec, from, to string) error {
	return d.take(AddonCall{Method: AddonUpgrade, Name: spec.Name, Version: spec.Version, From: from, To: to}).result(ctx)
}

// Uninstall records the call and returns the next scripted outcome.
func (d *AddonDriver) Uninstall(ctx context.Context, spec addon.Spec) error {
	return d.take(AddonCall{Method: AddonUninstall, Name: spec.Name, Version: spec.Version}).result(ctx)
}

// Health records the call and returns the next scripted outcome.
func (d *AddonDriver) Health(ctx context.Context, spec addon.Spec) (addon.Health, error) {
	o := d.take(AddonCall{Method: AddonHealth, Name: spec.Name, Version: spec.Version})
	if err := o.result(ctx); err != nil {
		return addon.HealthUnknown, err
	}
	if o.Health == "" {
		return addon.HealthHealthy, nil
	}
	return o.Health, nil
}

// AddonStatusStore is an addon.StatusWriter keeping the last status per
// add-on name. Conflicts makes the next that many writes fail with an error
// matching addon.ErrConflict, storing nothing. Safe for concurrent use.
type AddonStatusStore struct {
	mu sync.Mutex
	// Statuses is the last status written per name.
	Statuses map[string]addon.Status
	// Writes counts successful writes.
	Writes int
	// Conflicts is the number of coming writes to refuse with a conflict.
	Conflicts int
}

var _ addon.StatusWriter = (*AddonStatusStore)(nil)

// WriteStatus stores a deep copy of status, or refuses it with a conflict.
func (s *AddonStatusStore) WriteStatus(_ context.Context, spec addon.Spec, status addon.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Conflicts > 0 {
		s.Conflicts--
		return fmt.Errorf("fake: %s changed since read: %w", spec.Name, addon.ErrConflict)
	}
	if s.Statuses == nil {
		s.Statuses = map[string]addon.Status{}
	}
	s.Statuses[spec.Name] = *status.DeepCopy()
	s.Writes++
	return nil
}

// Get returns a deep copy of the last status written for name.
func (s *AddonStatusStore) Get(name string) (addon.Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.Statuses[name]
	return *st.DeepCopy(), ok
}

package fake

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

// AddonMethod names a method of addon.Driver, addon.DriftDetector,
// addon.Tester or addon.Inspector.
type AddonMethod string

// The methods AddonDriver implements.
const (
	AddonInstall   AddonMethod = "Install"
	AddonUpgrade   AddonMethod = "Upgrade"
	AddonUninstall AddonMethod = "Uninstall"
	AddonHealth    AddonMethod = "Health"
	AddonDrift     AddonMethod = "Drift"
	AddonTest      AddonMethod = "Test"
	AddonInspect   AddonMethod = "Inspect"
)

// AddonOutcome scripts one Driver call.
type AddonOutcome struct {
	// Err is returned by the call.
	Err error
	// Hang blocks the call until its context ends, then returns ctx.Err():
	// an action that never finishes before its deadline.
	Hang bool
	// Panic, when not nil, makes the call panic with it: host code that
	// crashes.
	Panic any
	// Revision is what an Install or Upgrade call returns; "" means the
	// driver's next own revision ("1", "2", …: one per Install or Upgrade
	// call, failed ones too, as Helm numbers a release's revisions).
	Revision string
	// Health is what a Health call reports; "" means addon.HealthHealthy.
	Health addon.Health
	// Drifted and Detail are what a Drift call reports.
	Drifted bool
	Detail  string
	// Installed, when not nil, is what an Inspect call reports; nil means
	// what the driver last applied (see AddonDriver).
	Installed *addon.Installed
}

// AddonCall is one recorded Driver call.
type AddonCall struct {
	Method AddonMethod
	// Name is the spec's name.
	Name string
	// From and To are the request's versions; Rollback marks a rollback,
	// and Revision is the request's revision (what a rollback goes back to).
	From, To string
	Rollback bool
	Revision string
	// Fence is the request's fencing token.
	Fence int64
}

// AddonDriver is a scripted addon.Driver that is also an
// addon.DriftDetector, an addon.Tester and an addon.Inspector. Each method
// takes the next outcome from its queue in Script; with an empty queue it
// succeeds (Health reports healthy, Drift none, Inspect what it last
// applied: the version and revision of its last Install or Upgrade that
// returned without error, nothing after such an Uninstall). Every call is
// recorded in Calls. It applies whatever it is asked, whatever the fencing
// token: a test plays a Driver that fences by scripting the refusal. Safe
// for concurrent use; read Calls with Recorded while calls may still run.
type AddonDriver struct {
	mu sync.Mutex
	// Script holds the queued outcomes per method, consumed in order.
	Script map[AddonMethod][]AddonOutcome
	// Calls records every call in order.
	Calls []AddonCall
	// revisions counts the Install and Upgrade calls.
	revisions int
	// applied is what the last successful Install, Upgrade or Uninstall
	// left.
	applied addon.Installed
}

var (
	_ addon.Driver        = (*AddonDriver)(nil)
	_ addon.DriftDetector = (*AddonDriver)(nil)
	_ addon.Tester        = (*AddonDriver)(nil)
	_ addon.Inspector     = (*AddonDriver)(nil)
)

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

func (d *AddonDriver) take(m AddonMethod, req addon.Request) AddonOutcome {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Calls = append(d.Calls, AddonCall{Method: m, Name: req.Spec.Name, From: req.From, To: req.To, Rollback: req.Rollback, Revision: req.Revision, Fence: req.Fence})
	var o AddonOutcome
	if q := d.Script[m]; len(q) > 0 {
		o, d.Script[m] = q[0], q[1:]
	}
	if (m == AddonInstall || m == AddonUpgrade) && o.Revision == "" {
		d.revisions++
		o.Revision = strconv.Itoa(d.revisions)
	}
	return o
}

func (o AddonOutcome) result(ctx context.Context) error {
	if o.Panic != nil {
		panic(o.Panic)
	}
	if o.Hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return o.Err
}

// apply notes what a call that returned err left: on success, what
// Inspect reports next.
func (d *AddonDriver) apply(err error, left addon.Installed) error {
	if err == nil {
		d.mu.Lock()
		d.applied = left
		d.mu.Unlock()
	}
	return err
}

// Install records the call and returns the next scripted outcome with its
// revision.
func (d *AddonDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	o := d.take(AddonInstall, req)
	return o.Revision, d.apply(o.result(ctx), addon.Installed{Version: req.To, Revision: o.Revision})
}

// Upgrade records the call (a rollback too) and returns the next scripted
// outcome with its revision.
func (d *AddonDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	o := d.take(AddonUpgrade, req)
	return o.Revision, d.apply(o.result(ctx), addon.Installed{Version: req.To, Revision: o.Revision})
}

// Uninstall records the call and returns the next scripted outcome.
func (d *AddonDriver) Uninstall(ctx context.Context, req addon.Request) error {
	return d.apply(d.take(AddonUninstall, req).result(ctx), addon.Installed{})
}

// Inspect records the call and returns the next scripted outcome: its
// Installed, or what the driver last applied.
func (d *AddonDriver) Inspect(ctx context.Context, req addon.Request) (addon.Installed, error) {
	o := d.take(AddonInspect, req)
	if err := o.result(ctx); err != nil {
		return addon.Installed{}, err
	}
	if o.Installed != nil {
		return *o.Installed, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applied, nil
}

// Health records the call and returns the next scripted outcome.
func (d *AddonDriver) Health(ctx context.Context, req addon.Request) (addon.Health, error) {
	o := d.take(AddonHealth, req)
	if err := o.result(ctx); err != nil {
		return addon.HealthUnknown, err
	}
	if o.Health == "" {
		return addon.HealthHealthy, nil
	}
	return o.Health, nil
}

// Drift records the call and returns the next scripted outcome.
func (d *AddonDriver) Drift(ctx context.Context, req addon.Request) (bool, string, error) {
	o := d.take(AddonDrift, req)
	if err := o.result(ctx); err != nil {
		return false, "", err
	}
	return o.Drifted, o.Detail, nil
}

// Test records the call and returns the next scripted outcome.
func (d *AddonDriver) Test(ctx context.Context, req addon.Request) error {
	return d.take(AddonTest, req).result(ctx)
}

// AddonStore is an addon.Store keeping add-ons in memory with a resource
// version per object, refusing a write from a stale read with an error
// wrapping converge.ErrConflict, as the apiserver does. Conflicts makes the
// next that many writes fail with a conflict as well, storing nothing.
// Safe for concurrent use.
type AddonStore struct {
	mu sync.Mutex
	// Objects holds the add-ons by name.
	Objects map[string]addon.Object
	// Writes counts successful status writes.
	Writes int
	// Conflicts is the number of coming writes to refuse with a conflict.
	Conflicts int
	version   int
}

var _ addon.Store = (*AddonStore)(nil)

// Put stores obj (a new add-on, or a new spec for one) under a new resource
// version and returns it as stored.
func (s *AddonStore) Put(obj addon.Object) addon.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.put(obj)
}

func (s *AddonStore) put(obj addon.Object) addon.Object {
	if s.Objects == nil {
		s.Objects = map[string]addon.Object{}
	}
	s.version++
	obj.ResourceVersion = strconv.Itoa(s.version)
	obj.Status = *obj.Status.DeepCopy()
	s.Objects[obj.Spec.Name] = obj
	return s.copyOf(obj)
}

// Update changes the spec of the add-on named name with f, keeping its
// status, and returns it as stored; false when there is none. When f
// changes what the API server keeps in an object's spec (Version) or marks the add-on deleted (Deleting), and leaves Generation
// as it was, Update moves Generation on by one, as the API server moves
// metadata.generation: the engine takes a changed spec as news only under
// a new generation. The reset and force tokens are annotations, which move
// no generation. A Generation f sets itself is kept.
func (s *AddonStore) Update(name string, f func(*addon.Spec)) (addon.Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.Objects[name]
	if !ok {
		return addon.Object{}, false
	}
	was := obj.Spec
	f(&obj.Spec)
	if obj.Spec.Generation == was.Generation && movesGeneration(was, obj.Spec) {
		obj.Spec.Generation++
	}
	return s.put(obj), true
}

// movesGeneration reports whether the API server would move the
// generation of an add-on whose spec went from was to now: a change of its
// spec, or the deletion timestamp set.
func movesGeneration(was, now addon.Spec) bool {
	return was.Version != now.Version || !was.Deleting && now.Deleting
}

func (s *AddonStore) copyOf(obj addon.Object) addon.Object {
	obj.Status = *obj.Status.DeepCopy()
	return obj
}

// Get returns a copy of the add-on named name.
func (s *AddonStore) Get(_ context.Context, name string) (addon.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.Objects[name]
	if !ok {
		return addon.Object{}, fmt.Errorf("fake: add-on %s not found", name)
	}
	return s.copyOf(obj), nil
}

// UpdateStatus stores status if obj is at the stored resource version.
func (s *AddonStore) UpdateStatus(_ context.Context, obj addon.Object, status addon.Status) (addon.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.Objects[obj.Spec.Name]
	switch {
	case !ok:
		return addon.Object{}, fmt.Errorf("fake: add-on %s not found", obj.Spec.Name)
	case s.Conflicts > 0:
		s.Conflicts--
		return addon.Object{}, fmt.Errorf("fake: %s: injected conflict: %w", obj.Spec.Name, converge.ErrConflict)
	case cur.ResourceVersion != obj.ResourceVersion:
		return addon.Object{}, fmt.Errorf("fake: %s changed since read (version %s, now %s): %w", obj.Spec.Name, obj.ResourceVersion, cur.ResourceVersion, converge.ErrConflict)
	}
	cur.Status = status
	s.Writes++
	return s.put(cur), nil
}

package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// StatusReader reads the persisted rollout status and its resource version.
type StatusReader interface {
	GetStatus(ctx context.Context) (st Status, resourceVersion string, err error)
}

// StatusWriter writes the rollout status if its resource version is still
// resourceVersion and returns the new version. A lost race returns the
// apiserver's 409 Conflict unchanged or an error wrapping ErrConflict (see
// Conflict).
type StatusWriter interface {
	UpdateStatus(ctx context.Context, st Status, resourceVersion string) (newResourceVersion string, err error)
}

// StatusReaderFunc adapts a function to StatusReader.
type StatusReaderFunc func(ctx context.Context) (Status, string, error)

// GetStatus calls f.
func (f StatusReaderFunc) GetStatus(ctx context.Context) (Status, string, error) { return f(ctx) }

// StatusWriterFunc adapts a function to StatusWriter.
type StatusWriterFunc func(ctx context.Context, st Status, resourceVersion string) (string, error)

// UpdateStatus calls f.
func (f StatusWriterFunc) UpdateStatus(ctx context.Context, st Status, resourceVersion string) (string, error) {
	return f(ctx, st, resourceVersion)
}

// StatusStore reads and writes the rollout status with optimistic concurrency.
// A host with two functions composes one from the Func adapters:
//
//	struct{ rollout.StatusReaderFunc; rollout.StatusWriterFunc }{get, update}
type StatusStore interface {
	StatusReader
	StatusWriter
}

// InstallerClient reads, creates and deletes installer pods.
type InstallerClient interface {
	// GetInstaller returns the installer's state, Phase InstallerNotFound when it does not exist.
	GetInstaller(ctx context.Context, inst Installer) (InstallerState, error)
	// EnsureInstaller creates the installer unless it exists.
	EnsureInstaller(ctx context.Context, inst Installer) error
	// DeleteInstaller deletes the installer and returns nil only once it is
	// gone or can no longer run (a pod deleted with no grace period); a
	// missing installer is not an error. Until it returns nil the
	// installer stays in Status.InstallersToDelete and is deleted again on
	// later syncs.
	DeleteInstaller(ctx context.Context, inst Installer) error
}

// OperandReader reads a node's operand pod.
type OperandReader interface {
	// GetOperand returns the operand's state, Phase OperandNotFound when it does not exist.
	GetOperand(ctx context.Context, node string) (OperandState, error)
}

// OperandReaderFunc adapts a function to OperandReader.
type OperandReaderFunc func(ctx context.Context, node string) (OperandState, error)

// GetOperand calls f.
func (f OperandReaderFunc) GetOperand(ctx context.Context, node string) (OperandState, error) {
	return f(ctx, node)
}

// Node is a node the rollout covers, as a NodeLister reports it.
type Node struct {
	// Name is the node's name.
	Name string
	// Unreachable is true when the node is not Ready.
	Unreachable bool
}

// NodeLister lists the nodes the rollout covers (a host serves it from its
// node informer). A node it no longer lists has left: its status is
// dropped and its unfinished installer deleted; list a node that is
// unreachable but may come back as Unreachable.
type NodeLister interface {
	ListNodes(ctx context.Context) ([]Node, error)
}

// NodeListerFunc adapts a function to NodeLister.
type NodeListerFunc func(ctx context.Context) ([]Node, error)

// ListNodes calls f.
func (f NodeListerFunc) ListNodes(ctx context.Context) ([]Node, error) { return f(ctx) }

var (
	_ StatusReader = StatusReaderFunc(nil)
	_ StatusWriter = StatusWriterFunc(nil)
	_ StatusStore  = struct {
		StatusReaderFunc
		StatusWriterFunc
	}{}
	_ OperandReader = OperandReaderFunc(nil)
	_ NodeLister    = NodeListerFunc(nil)
)

// DefaultConflictRetries is how often Sync decides again after a status conflict.
const DefaultConflictRetries = 3

// Config wires a Controller to its host. Status, Installers and Operands
// are required; every other field has a default.
type Config struct {
	// Status persists the rollout status.
	Status StatusStore
	// Installers manages installer pods.
	Installers InstallerClient
	// Operands reads operand pods.
	Operands OperandReader
	// Nodes lists the nodes and their reachability; nil means the nodes of
	// the status, every one reachable.
	Nodes NodeLister
	// Clock supplies now; nil means clock.RealClock.
	Clock clock.PassiveClock
	// Policy tunes the rollout.
	Policy Policy
	// Jitter draws the jitter of a retry time, in [0,1); nil means
	// math/rand/v2's Float64. It only matters with a
	// Policy.InstallerBackoff.JitterPercent.
	Jitter func() float64
	// ConflictRetries is how often a sync reads and decides again after a
	// status conflict before returning it (0 means DefaultConflictRetries).
	ConflictRetries int
}

// Controller is the thin shell around PlanRollout: each Sync reads the status
// and everything it observes once, plans, and applies the plan step by step,
// writing a node's status before acting on it so that the state is
// debuggable from outside and a write lost to a conflict has changed
// nothing. It keeps no state between syncs: a new Controller on the same
// status continues where the last one stopped.
//
// A step writes the status (with the installers that must go recorded in
// Status.InstallersToDelete), then creates the node's next installer, and
// its events join Result.Events. Once every step is applied the recorded
// installers are deleted; those the host confirms gone leave the status in
// a last write, the others are deleted again on later syncs. A sync where
// nothing changed writes nothing.
//
// A Controller is safe for concurrent use if its host interfaces are, but
// syncs of one rollout should be serialized (a workqueue does that).
type Controller struct {
	cfg     Config
	retries int
}

// NewController validates cfg once and returns a Controller. A missing
// required interface (nil, or a typed nil such as a nil pointer or func
// inside the interface) or a bad Policy is an error wrapping ErrInvalid.
func NewController(cfg Config) (*Controller, error) {
	for _, f := range []struct {
		name     string
		v        any
		required bool
	}{
		{"Status", cfg.Status, true}, {"Installers", cfg.Installers, true}, {"Operands", cfg.Operands, true},
		{"Nodes", cfg.Nodes, false}, {"Clock", cfg.Clock, false},
	} {
		if f.v == nil {
			if f.required {
				return nil, invalidf("Config.%s is required", f.name)
			}
			continue
		}
		if isNil(f.v) {
			return nil, invalidf("Config.%s holds a nil %T", f.name, f.v)
		}
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.ConflictRetries < 0 {
		return nil, invalidf("Config.ConflictRetries %d is negative", cfg.ConflictRetries)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	retries := cfg.ConflictRetries
	if retries == 0 {
		retries = DefaultConflictRetries
	}
	return &Controller{cfg: cfg, retries: retries}, nil
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// func, map, chan, slice or interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Result is the outcome of a sync, shaped like controller-runtime's
// reconcile.Result. It is returned even beside an error, so that events of
// steps already written are not lost.
type Result struct {
	// RequeueAfter is when to sync again at the latest (0 = on the next change).
	RequeueAfter time.Duration
	// Events are the events of the status changes this sync wrote, in
	// order; the host records them.
	Events []Event
}

// Sync runs one observe → plan → act pass. A status conflict (ErrConflict
// or the apiserver's 409) makes it read and decide again, up to
// ConflictRetries times, so that no transition is lost; the error it finally
// returns is still a conflict.
func (c *Controller) Sync(ctx context.Context) (Result, error) {
	if c == nil {
		return Result{}, invalidf("Sync on a nil Controller")
	}
	log := klog.FromContext(ctx)
	var res Result
	for attempt := 0; ; attempt++ {
		requeue, err := c.syncOnce(ctx, &res)
		if err != nil && IsConflict(err) && attempt < c.retries && ctx.Err() == nil {
			log.V(2).Info("Status conflict, deciding again", "attempt", attempt+1, "err", err)
			continue
		}
		if err == nil {
			res.RequeueAfter = requeue
		}
		return res, err
	}
}

// syncOnce reads, plans and applies once; the events of every write it makes
// join res.Events.
func (c *Controller) syncOnce(ctx context.Context, res *Result) (time.Duration, error) {
	log := klog.FromContext(ctx)
	st, rv, err := c.cfg.Status.GetStatus(ctx)
	if err != nil {
		return 0, fmt.Errorf("rollout: reading status: %w", err)
	}
	obs, aligned, err := c.observe(ctx, st)
	if err != nil {
		return 0, err
	}
	now := c.cfg.Clock.Now()
	plan, err := planRollout(Input{Status: st, Observation: obs, Policy: c.cfg.Policy, Now: now, Jitter: c.cfg.Jitter()}, aligned)
	if err != nil {
		return 0, err
	}
	log = log.WithValues("latestRevision", plan.Latest)
	log.V(2).Info("Planned rollout", "reason", plan.Reason, "start", plan.Start)

	// work is the status as written so far; its nodes are copied before
	// the first step changes them (a sync where nothing changed copies nothing).
	work := st
	work.InstallersToDelete = slices.Clone(st.InstallersToDelete)
	work.Conditions = slices.Clone(st.Conditions)
	dirty, copied := false, false
	if !sortedByName(work.NodeStatuses) {
		work.NodeStatuses, copied, dirty = sortNodes(work.NodeStatuses), true, true
	}
	write := func(what string) error {
		work.HeldSince = plan.Status.HeldSince
		if _, err := ApplyConditions(&work, plan.HeldBy, c.cfg.Policy, now); err != nil {
			return err
		}
		if rv, err = c.cfg.Status.UpdateStatus(ctx, work, rv); err != nil {
			return fmt.Errorf("rollout: writing %s: %w", what, err)
		}
		dirty = false
		return nil
	}
	// Every node's decision is persisted in one write before any installer
	// is created: a crash after it leaves decisions without installers,
	// which the next sync ensures, never an installer without its decision;
	// and a sync moving many nodes writes the status once, not once a node.
	var changedNodes []string // in plan order, each once: a node that joins and starts has two steps
	var seen map[string]bool
	var events []Event // the acting steps', returned once their decisions are written
	for _, step := range plan.Steps {
		if !step.Acts() {
			log.V(4).Info("Node waits", "node", step.Node, "reason", step.Reason)
			continue
		}
		events = append(events, step.Events...)
		if step.To != nil || step.Remove || len(step.Delete) > 0 {
			if !copied {
				work.NodeStatuses, copied = slices.Clone(work.NodeStatuses), true
			}
			applyStep(&work, step)
			if !seen[step.Node] {
				if seen == nil {
					seen = map[string]bool{}
				}
				seen[step.Node] = true
				changedNodes = append(changedNodes, step.Node)
			}
			log.V(2).Info("Node status changes", "node", step.Node, "reason", step.Reason)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(changedNodes) > 0 {
		if err := write(nodesChanged(changedNodes)); err != nil {
			return 0, err
		}
		log.Info("Node statuses changed", "nodes", len(changedNodes))
	}
	res.Events = append(res.Events, events...) // persisted now, whatever the creates do
	// Each installer is created on its own: one that fails is that node's
	// failed attempt on the next sync, and does not hold the others back.
	var createErrs []error
	for _, step := range plan.Steps {
		if !step.Acts() || step.Create == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, errors.Join(append(createErrs, err)...)
		}
		if err := c.cfg.Installers.EnsureInstaller(ctx, *step.Create); err != nil {
			createErrs = append(createErrs, fmt.Errorf("rollout: creating installer %s: %w", step.Create.Name, err))
		}
	}
	if len(createErrs) > 0 {
		return 0, errors.Join(createErrs...)
	}

	kept := work.InstallersToDelete[:0:0]
	for _, inst := range work.InstallersToDelete {
		if err := c.cfg.Installers.DeleteInstaller(ctx, inst); err != nil {
			log.Error(err, "Deleting installer failed, retrying on a later sync", "installer", inst.Name)
			kept = append(kept, inst)
			continue
		}
		dirty = true
	}
	if dirty {
		work.InstallersToDelete = kept
		if len(kept) == 0 {
			work.InstallersToDelete = nil
		}
	}
	if !timeEqual(work.HeldSince, plan.Status.HeldSince) {
		dirty = true
	}
	work.HeldSince = plan.Status.HeldSince
	// Every step is applied: the nodes are the plan's, and so are the
	// conditions (the installers confirmed gone do not change them).
	changed := !conditionsEqual(work.Conditions, plan.Status.Conditions)
	work.Conditions = plan.Status.Conditions
	if dirty || changed {
		if err := write("conditions"); err != nil {
			return 0, err
		}
	}
	requeue := plan.RequeueAfter
	if len(kept) > 0 && (requeue == 0 || requeue > deleteRetryInterval) {
		requeue = deleteRetryInterval
	}
	return requeue, nil
}

// nodesChanged names the nodes of a status write in its error: the first
// node, and how many more.
func nodesChanged(nodes []string) string {
	if len(nodes) == 1 {
		return "status of node " + nodes[0]
	}
	return fmt.Sprintf("status of node %s and %d more", nodes[0], len(nodes)-1)
}

// deleteRetryInterval is how soon a sync looks again after a failed
// installer delete.
const deleteRetryInterval = 5 * time.Second

// timeEqual compares two optional times.
func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// conditionsEqual compares two condition lists field by field (no reflection:
// a sync where nothing changed stays cheap).
func conditionsEqual(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message &&
			x.ObservedGeneration == y.ObservedGeneration && x.LastTransitionTime.Equal(&y.LastTransitionTime)
	})
}

// applyStep applies one node decision to a status sorted by node name.
func applyStep(st *Status, d NodeDecision) {
	i, found := slices.BinarySearchFunc(st.NodeStatuses, d.Node, func(n NodeStatus, name string) int { return strings.Compare(n.NodeName, name) })
	switch {
	case d.Remove:
		if found {
			st.NodeStatuses = slices.Delete(st.NodeStatuses, i, i+1)
		}
	case d.To != nil && found:
		st.NodeStatuses[i] = *d.To
	case d.To != nil:
		st.NodeStatuses = slices.Insert(st.NodeStatuses, i, *d.To)
	}
	addDeletes(st, d.Delete)
}

// observe lists the nodes (or takes them from the status), reads every
// node's operand once and, for a node in transition, the installer of its
// target and attempt. When the nodes are exactly the status's, in its
// (sorted) order, the observations come back aligned with the status and
// no map is built; otherwise as an Observation.
func (c *Controller) observe(ctx context.Context, st Status) (Observation, []NodeObservation, error) {
	var nodes []Node
	if c.cfg.Nodes != nil {
		listed, err := c.cfg.Nodes.ListNodes(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("rollout: listing nodes: %w", err)
		}
		nodes = listed
	} else {
		nodes = make([]Node, len(st.NodeStatuses))
		for i, n := range st.NodeStatuses {
			nodes[i] = Node{Name: n.NodeName}
		}
	}
	if sameNodes(nodes, st.NodeStatuses) {
		views := make([]NodeObservation, len(nodes))
		for i, n := range st.NodeStatuses {
			o, err := c.observeNode(ctx, n, nodes[i].Unreachable)
			if err != nil {
				return nil, nil, err
			}
			views[i] = o
		}
		return nil, views, nil
	}
	index := make(map[string]int, len(st.NodeStatuses))
	for i, n := range st.NodeStatuses {
		index[n.NodeName] = i
	}
	obs := make(Observation, len(nodes))
	for _, n := range nodes {
		if n.Name == "" {
			return nil, nil, invalidf("listed a node with an empty name")
		}
		if _, dup := obs[n.Name]; dup {
			return nil, nil, invalidf("listed node %q twice", n.Name)
		}
		status := NodeStatus{NodeName: n.Name}
		if i, ok := index[n.Name]; ok {
			status = st.NodeStatuses[i]
		}
		o, err := c.observeNode(ctx, status, n.Unreachable)
		if err != nil {
			return nil, nil, err
		}
		obs[n.Name] = o
	}
	return obs, nil, nil
}

// sameNodes reports whether the listed nodes are exactly the status's, in
// its order, and that order is sorted by name.
func sameNodes(nodes []Node, status []NodeStatus) bool {
	if len(nodes) != len(status) || len(nodes) == 0 {
		return false
	}
	for i := range nodes {
		if nodes[i].Name != status[i].NodeName || (i > 0 && status[i-1].NodeName >= status[i].NodeName) {
			return false
		}
	}
	return true
}

// observeNode reads one node's operand and, in transition, its installer.
func (c *Controller) observeNode(ctx context.Context, n NodeStatus, unreachable bool) (NodeObservation, error) {
	op, err := c.cfg.Operands.GetOperand(ctx, n.NodeName)
	if err != nil {
		return NodeObservation{}, fmt.Errorf("rollout: reading operand of node %s: %w", n.NodeName, err)
	}
	o := NodeObservation{Operand: op, Unreachable: unreachable}
	if n.InTransition() {
		inst, err := c.cfg.Installers.GetInstaller(ctx, installerFor(n))
		if err != nil {
			return NodeObservation{}, fmt.Errorf("rollout: reading installer %s: %w", InstallerName(n), err)
		}
		o.Installer = inst
	}
	return o, nil
}

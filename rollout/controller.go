package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// StatusReader reads the persisted rollout status and its resource version.
type StatusReader interface {
	GetStatus(ctx context.Context) (st Status, resourceVersion string, err error)
}

// StatusWriter writes the rollout status if its resource version is still
// resourceVersion and returns the new version. A lost race returns the
// apiserver's 409 Conflict unchanged or an error marked with
// converge.Conflict.
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

// defaultConflictRetries is how often Sync decides again after a status conflict.
const defaultConflictRetries = 3

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
	// status conflict before returning it (0 means 3).
	ConflictRetries int
}

// Controller is the thin shell around Decide: each Sync reads the status
// and everything it observes once, decides, writes the decision's status,
// acts on it and writes the final status. It keeps no state between syncs:
// a new Controller on the same status continues where the last one stopped.
//
// The first write persists every node decision, with the installers that
// must go recorded in Status.InstallersToDelete, before anything is done
// for any node: a crash after it leaves decisions without installers, which
// the next sync ensures, never an installer without its decision; and a
// write lost to a conflict has changed nothing. The events of that write
// join Result.Events. Then each installer is created on its own (one that
// fails is that node's failed attempt on a later sync and holds no other
// node back), the recorded installers are deleted, and those the host
// confirms gone leave the status in a last write; the others are deleted
// again on later syncs. A sync where nothing changed writes nothing.
//
// A Controller is safe for concurrent use if its host interfaces are, but
// syncs of one rollout should be serialized (a workqueue does that).
type Controller struct {
	cfg     Config
	retries int
}

// NewController validates cfg once and returns a Controller. A missing
// required interface (nil, or a typed nil such as a nil pointer or func
// inside the interface) or a bad Policy is an error matching
// converge.ErrInvalid.
func NewController(cfg Config) (*Controller, error) {
	var problems []string
	for _, f := range []struct {
		name     string
		v        any
		required bool
	}{
		{"Status", cfg.Status, true}, {"Installers", cfg.Installers, true}, {"Operands", cfg.Operands, true},
		{"Nodes", cfg.Nodes, false}, {"Clock", cfg.Clock, false},
	} {
		switch {
		case f.v == nil && f.required:
			problems = append(problems, f.name+" is required")
		case f.v != nil && input.IsNil(f.v):
			problems = append(problems, fmt.Sprintf("%s holds a nil %T", f.name, f.v))
		}
	}
	if cfg.ConflictRetries < 0 {
		problems = append(problems, fmt.Sprintf("ConflictRetries %d is negative", cfg.ConflictRetries))
	}
	problems = append(problems, input.Problems(cfg.Policy.Validate(), "Policy: ")...)
	if err := input.Invalid("rollout", "config", problems...); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	retries := cfg.ConflictRetries
	if retries == 0 {
		retries = defaultConflictRetries
	}
	return &Controller{cfg: cfg, retries: retries}, nil
}

// Sync runs one observe → decide → act pass. A status conflict
// (converge.IsConflict) makes it read and decide again, up to
// ConflictRetries times, so that no transition is lost; the error it finally
// returns is still a conflict. The Result is returned beside an error too,
// with the events of what was written. Sync on a Controller not made by
// NewController is an error matching converge.ErrInvalid.
func (c *Controller) Sync(ctx context.Context) (converge.Result, error) {
	if c == nil || c.cfg.Status == nil {
		return converge.Result{}, input.Invalidf("rollout", "controller", "Sync on a Controller not made by NewController")
	}
	log := klog.FromContext(ctx)
	var res converge.Result
	for attempt := 0; ; attempt++ {
		requeue, err := c.syncOnce(ctx, &res)
		if err != nil && converge.IsConflict(err) && attempt < c.retries && ctx.Err() == nil {
			log.V(2).Info("Status conflict, deciding again", "attempt", attempt+1, "err", err)
			continue
		}
		if err == nil {
			res.RequeueAfter = requeue
		}
		return res, err
	}
}

// syncOnce reads, decides, writes, acts and writes once; the events of the
// decision it writes join res.Events.
func (c *Controller) syncOnce(ctx context.Context, res *converge.Result) (time.Duration, error) {
	log := klog.FromContext(ctx)
	st, rv, err := c.cfg.Status.GetStatus(ctx)
	if err != nil {
		return 0, fmt.Errorf("rollout: reading status: %w", err)
	}
	obs, aligned, err := c.observe(ctx, st)
	if err != nil {
		return 0, err
	}
	d, err := decide(Input{Status: st, Observation: obs, Policy: c.cfg.Policy, Now: c.cfg.Clock.Now(), Jitter: c.cfg.Jitter()}, aligned)
	if err != nil {
		return 0, err
	}
	log = log.WithValues("latestRevision", d.Latest)
	log.V(2).Info("Decided", "reason", d.Reason, "start", d.Start)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d.StatusChanged {
		if rv, err = c.cfg.Status.UpdateStatus(ctx, d.Status, rv); err != nil {
			return 0, fmt.Errorf("rollout: writing %s: %w", d.written(), err)
		}
		res.Events = append(res.Events, d.Events()...)
	}

	var errs []error
	for _, step := range d.Steps {
		if step.Create == nil {
			continue
		}
		if err := c.cfg.Installers.EnsureInstaller(ctx, *step.Create); err != nil {
			errs = append(errs, fmt.Errorf("rollout: creating installer %s: %w", step.Create.Name, err))
		}
	}
	var kept []Installer
	for _, inst := range d.Status.InstallersToDelete {
		if err := c.cfg.Installers.DeleteInstaller(ctx, inst); err != nil {
			log.Error(err, "Deleting installer failed, retrying on a later sync", "installer", inst.Name)
			kept = append(kept, inst)
		}
	}
	if len(kept) < len(d.Status.InstallersToDelete) {
		final := d.Final
		final.InstallersToDelete = kept
		if _, err := c.cfg.Status.UpdateStatus(ctx, final, rv); err != nil {
			errs = append(errs, fmt.Errorf("rollout: writing the installers confirmed deleted: %w", err))
		}
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	requeue := d.RequeueAfter
	if len(kept) > 0 && (requeue == 0 || requeue > deleteRetryInterval) {
		requeue = deleteRetryInterval
	}
	return requeue, nil
}

// deleteRetryInterval is how soon a sync looks again after a failed
// installer delete.
const deleteRetryInterval = 5 * time.Second

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
			return nil, nil, input.Invalidf("rollout", "node list", "a node with an empty name")
		}
		if _, dup := obs[n.Name]; dup {
			return nil, nil, input.Invalidf("rollout", "node list", "node %q listed twice", n.Name)
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

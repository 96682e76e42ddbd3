package rollout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/internal/input"
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
	// Operands reads operand pods: one node a call, or every node in one
	// call if it is an OperandBatchReader.
	Operands OperandReader
	// Nodes lists the nodes and their reachability; nil means the nodes of
	// the status, every one reachable.
	Nodes NodeLister
	// Gate, when set, is asked before any node is started, and holds the
	// nodes it does not admit (see Gate).
	Gate Gate
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
	// OnDecision, when set, is called with each decision a sync acts on,
	// before it writes the status (again after a conflict, which decides
	// again): a host prints, logs or records the plan. It must not change
	// the decision.
	OnDecision func(Decision)
	// Generation is the generation of the resource Policy and the latest
	// revision come from (Input.Generation; 0: none): the status'
	// ObservedGeneration follows it up.
	Generation int64
}

// Controller is the thin shell around Decide: each Sync reads the status
// and everything it observes once, decides, writes the decision's status,
// acts on it and writes the final status. It keeps no state between syncs:
// a new Controller on the same status continues where the last one stopped.
//
// The first write persists every node decision, with the installers that
// must go recorded in Status.InstallersToDelete, before anything is done
// for any node: a crash after it leaves decisions without installers, which
// the next sync ensures under the same names (an installer ordered and
// never seen is no failed attempt, see NodeStatus.InstallerNotSeen), never
// an installer without its decision; and a write lost to a conflict has
// changed nothing. The events of that write join Result.Events. Then each
// installer is created on its own (one the host refuses holds no other
// node back), the recorded installers are deleted, and a last write records
// each refused create as its node's failed attempt
// (ReasonInstallerCreateFailed, with its backoff, so a refusal that never
// ends is bounded) and drops the installers the host confirms gone; the
// others are deleted again on later syncs. A sync where nothing changed
// writes nothing.
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
	problems := input.Fields(
		input.FieldValue{Name: "Status", Value: cfg.Status, Required: true},
		input.FieldValue{Name: "Installers", Value: cfg.Installers, Required: true},
		input.FieldValue{Name: "Operands", Value: cfg.Operands, Required: true},
		input.FieldValue{Name: "Nodes", Value: cfg.Nodes},
		input.FieldValue{Name: "Gate", Value: cfg.Gate},
		input.FieldValue{Name: "Clock", Value: cfg.Clock},
	)
	if cfg.ConflictRetries < 0 {
		problems = append(problems, fmt.Sprintf("ConflictRetries %d is negative", cfg.ConflictRetries))
	}
	if cfg.Generation < 0 {
		problems = append(problems, fmt.Sprintf("Generation %d is negative", cfg.Generation))
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
		return converge.Result{}, input.NotMade("rollout", "Controller")
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
	buf := observing()
	defer buf.release()
	obs, aligned, err := c.observe(ctx, st, buf)
	if err != nil {
		return 0, err
	}
	in := Input{Status: st, Observation: obs, Policy: c.cfg.Policy, Now: c.cfg.Clock.Now(), Jitter: c.cfg.Jitter(),
		Gated: c.cfg.Gate != nil, Generation: c.cfg.Generation}
	d, err := c.decide(ctx, in, aligned)
	if err != nil {
		return 0, err
	}
	log = log.WithValues("latestRevision", d.Latest)
	log.V(2).Info("Decided", "reason", d.Reason, "start", d.Start)
	if c.cfg.OnDecision != nil {
		c.cfg.OnDecision(d)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if d.StatusChanged {
		if rv, err = c.cfg.Status.UpdateStatus(ctx, d.Status, rv); err != nil {
			return 0, fmt.Errorf("rollout: writing %s: %w", d.written(), err)
		}
		res.Events = append(res.Events, d.Events...)
	}

	errs, refusals := c.create(ctx, d)
	var kept []Installer
	for _, inst := range d.Status.InstallersToDelete {
		if err := c.cfg.Installers.DeleteInstaller(ctx, inst); err != nil {
			log.Error(err, "Deleting installer failed, retrying on a later sync", "installer", inst.Name)
			kept = append(kept, inst)
		}
	}
	if len(kept) < len(d.Status.InstallersToDelete) || len(refusals) > 0 {
		final, events, err := refusedFinal(d.Final, refusals, d.Holds, in)
		if err == nil {
			final.InstallersToDelete = kept
			_, err = c.cfg.Status.UpdateStatus(ctx, final, rv)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("rollout: writing the status after acting: %w", err))
		} else {
			res.Events = append(res.Events, events...)
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

// create ensures the installers of the decision's steps, each on its own,
// and returns the errors and the refusals: the creates the host refused
// while the sync's context was alive, each a failed attempt of its node.
func (c *Controller) create(ctx context.Context, d Decision) ([]error, []refusal) {
	var errs []error
	var refusals []refusal
	for _, step := range d.Steps {
		if step.Create == nil {
			continue
		}
		if err := c.cfg.Installers.EnsureInstaller(ctx, *step.Create); err != nil {
			errs = append(errs, fmt.Errorf("rollout: creating installer %s: %w", step.Create.Name, err))
			if ctx.Err() == nil {
				refusals = append(refusals, refusal{inst: *step.Create, err: err})
			}
		}
	}
	return errs, refusals
}

// decide decides, asking the gate about each start the decision would make,
// one at a time and with what the decision takes down before it, and
// deciding again with each answer, until it makes no start the gate has not
// answered for. Each round answers one more start, so the rounds are
// bounded by the number of nodes.
func (c *Controller) decide(ctx context.Context, in Input, aligned []NodeObservation) (Decision, error) {
	for {
		d, err := decide(in, aligned)
		if err != nil || d.Unadmitted == nil {
			return d, err
		}
		if in.Admissions == nil {
			in.Admissions = map[string]string{}
		}
		answer := ""
		if err := c.cfg.Gate.Admit(ctx, *d.Unadmitted); err != nil {
			answer = conditions.TruncateMessage(err.Error(), MaxErrorLength)
			if answer == "" {
				answer = "denied without a reason"
			}
		}
		in.Admissions[d.Unadmitted.Installer.Name] = answer
	}
}

// deleteRetryInterval is how soon a sync looks again after a failed
// installer delete.
const deleteRetryInterval = 5 * time.Second

// observe lists the nodes (or takes them from the status), reads their
// operands (in one call from an OperandBatchReader) and, for a node in
// transition, the installer of its target and attempt. When the nodes are
// exactly the status's, in its (sorted) order, the observations come back
// aligned with the status and no map is built; otherwise as an Observation.
func (c *Controller) observe(ctx context.Context, st Status, buf *observation) (Observation, []NodeObservation, error) {
	var nodes []Node
	if c.cfg.Nodes != nil {
		listed, err := c.cfg.Nodes.ListNodes(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("rollout: listing nodes: %w", err)
		}
		nodes = listed
	} else {
		buf.nodes = grow(buf.nodes, len(st.NodeStatuses))
		nodes = buf.nodes
		for i, n := range st.NodeStatuses {
			nodes[i] = Node{Name: n.NodeName, UID: n.NodeUID}
		}
	}
	aligned := sameNodes(nodes, st.NodeStatuses)
	var index map[string]int
	if !aligned {
		index = make(map[string]int, len(st.NodeStatuses))
		for i, n := range st.NodeStatuses {
			index[n.NodeName] = i
		}
		seen := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			if n.Name == "" {
				return nil, nil, input.Invalidf("rollout", "node list", "a node with an empty name")
			}
			if seen[n.Name] {
				return nil, nil, input.Invalidf("rollout", "node list", "node %q listed twice", n.Name)
			}
			seen[n.Name] = true
		}
	}
	operands, err := c.operands(ctx, nodes, buf)
	if err != nil {
		return nil, nil, err
	}
	buf.views = grow(buf.views, len(nodes))
	views := buf.views
	for i, node := range nodes {
		views[i] = NodeObservation{UID: node.UID, Operand: operands[i], Unreachable: node.Unreachable}
		var status *NodeStatus
		if aligned {
			status = &st.NodeStatuses[i]
		} else if j, ok := index[node.Name]; ok {
			status = &st.NodeStatuses[j]
		}
		if status == nil || !status.InTransition() {
			continue
		}
		inst, err := c.cfg.Installers.GetInstaller(ctx, installerFor(*status))
		if err != nil {
			return nil, nil, fmt.Errorf("rollout: reading installer %s: %w", InstallerName(*status), err)
		}
		views[i].Installer = inst
	}
	if aligned {
		return nil, views, nil
	}
	obs := make(Observation, len(nodes))
	for i, node := range nodes {
		obs[node.Name] = views[i]
	}
	return obs, nil, nil
}

// operands reads the operands of the nodes, in one call from an
// OperandBatchReader, else one call a node.
func (c *Controller) operands(ctx context.Context, nodes []Node, buf *observation) ([]OperandState, error) {
	buf.operands = grow(buf.operands, len(nodes))
	operands := buf.operands
	if batch, ok := c.cfg.Operands.(OperandBatchReader); ok {
		buf.names = grow(buf.names, len(nodes))
		names := buf.names
		for i, n := range nodes {
			names[i] = n.Name
		}
		if err := batch.GetOperands(ctx, names, operands); err != nil {
			return nil, fmt.Errorf("rollout: reading operands: %w", err)
		}
		return operands, nil
	}
	for i, n := range nodes {
		op, err := c.cfg.Operands.GetOperand(ctx, n.Name)
		if err != nil {
			return nil, fmt.Errorf("rollout: reading operand of node %s: %w", n.Name, err)
		}
		operands[i] = op
	}
	return operands, nil
}

// observation holds the buffers a sync observes into: a rollout of
// thousands of nodes needs several the size of all its nodes each sync, and
// gives them back once it acted.
type observation struct {
	nodes    []Node
	names    []string
	operands []OperandState
	views    []NodeObservation
}

var observations = sync.Pool{New: func() any { return new(observation) }}

func observing() *observation { return observations.Get().(*observation) }

// release clears the buffers, so that they hold no observation's memory,
// and gives them back.
func (o *observation) release() {
	clear(o.nodes[:cap(o.nodes)])
	clear(o.names[:cap(o.names)])
	clear(o.operands[:cap(o.operands)])
	clear(o.views[:cap(o.views)])
	observations.Put(o)
}

// grow returns s resized to n elements, reusing its memory when it is
// large enough (release left it zeroed).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
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

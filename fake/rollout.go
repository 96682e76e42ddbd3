package fake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/rollout"
)

// InstallerOutcome scripts how one installer pod ends.
type InstallerOutcome string

// Installer outcomes.
const (
	// InstallerSucceeds: the installer succeeds and the operand moves to its revision (the default).
	InstallerSucceeds InstallerOutcome = "Succeeds"
	// InstallerFails: the installer fails with the script's message.
	InstallerFails InstallerOutcome = "Fails"
	// InstallerOOMKilled: the installer's container is OOM killed.
	InstallerOOMKilled InstallerOutcome = "OOMKilled"
	// InstallerHangs: the installer stays pending forever.
	InstallerHangs InstallerOutcome = "Hangs"
	// InstallerDisappears: the installer pod vanishes (evicted, deleted by hand).
	InstallerDisappears InstallerOutcome = "Disappears"
)

// InstallerScript is the outcome of one installer attempt.
type InstallerScript struct {
	// Outcome is how the installer ends; empty means InstallerSucceeds.
	Outcome InstallerOutcome
	// Message is the container's termination message for Fails and OOMKilled.
	Message string
}

// RolloutMethod names a method of the rollout host interfaces.
type RolloutMethod string

// The rollout host methods a RolloutCluster records and can fail.
const (
	RolloutGetInstaller    RolloutMethod = "GetInstaller"
	RolloutEnsureInstaller RolloutMethod = "EnsureInstaller"
	RolloutDeleteInstaller RolloutMethod = "DeleteInstaller"
	RolloutGetOperand      RolloutMethod = "GetOperand"
	RolloutListNodes       RolloutMethod = "ListNodes"
)

// RolloutCall is one recorded call to the rollout host interfaces.
type RolloutCall struct {
	// Method is the method called.
	Method RolloutMethod
	// Node is the node the call is about.
	Node string
	// Installer is the installer name for the installer methods.
	Installer string
}

// RolloutPod is an installer pod of a RolloutCluster.
type RolloutPod struct {
	// Installer is the installer the pod runs.
	Installer rollout.Installer
	// State is what GetInstaller reports.
	State rollout.InstallerState
	// Script is what the pod will do when the kubelet moves it on.
	Script InstallerScript
}

// RolloutCluster is an in-memory cluster of nodes for the rollout engine: it
// implements rollout.InstallerClient, rollout.OperandReader and
// rollout.NodeLister. Installer pods and operands only move when Tick is
// called (a simulated kubelet), so a test controls every step.
//
// Scripts are data: InstallerScripts[node][i] is how the i-th installer
// created on that node ends (Succeeds when missing); OperandFails[node][rev]
// makes the operand of that revision fail with the message instead of
// becoming ready, OperandHangs[node][rev] keeps it pending. Every call is
// recorded in Calls. Errors[method] makes that method fail. Safe for
// concurrent use; read fields through the accessor methods while calls may
// run.
type RolloutCluster struct {
	mu sync.Mutex
	// Clock stamps start and ready times; nil means the real clock.
	Clock clock.PassiveClock
	// Nodes are the nodes ListNodes lists, in order.
	Nodes []string
	// Operands holds each node's operand pod.
	Operands map[string]rollout.OperandState
	// Pods holds installer pods by name.
	Pods map[string]*RolloutPod
	// Unreachable marks nodes whose Node is not Ready.
	Unreachable map[string]bool
	// InstallerScripts scripts installers per node and attempt.
	InstallerScripts map[string][]InstallerScript
	// OperandFails makes an operand revision fail on a node, with a message.
	OperandFails map[string]map[int32]string
	// OperandHangs keeps an operand revision pending on a node.
	OperandHangs map[string]map[int32]bool
	// Errors makes a method return an error.
	Errors map[RolloutMethod]error
	// Attempts counts the installers created per node.
	Attempts map[string]int
	// Calls records every call in order.
	Calls []RolloutCall
	// Created records the installers created, in order.
	Created []rollout.Installer
	// Deleted records the installers deleted (that existed), in order.
	Deleted []rollout.Installer
}

var (
	_ rollout.InstallerClient = (*RolloutCluster)(nil)
	_ rollout.OperandReader   = (*RolloutCluster)(nil)
	_ rollout.NodeLister      = (*RolloutCluster)(nil)
)

// NewRolloutCluster returns a cluster whose nodes all run a ready operand of
// revision rev (no operand at all when rev is 0).
func NewRolloutCluster(clk clock.PassiveClock, rev int32, nodes ...string) *RolloutCluster {
	c := &RolloutCluster{Clock: clk, Nodes: append([]string(nil), nodes...)}
	c.init()
	for _, n := range nodes {
		if rev == 0 {
			continue
		}
		c.Operands[n] = rollout.OperandState{Phase: rollout.OperandReady, Revision: rev, ReadySince: c.now()}
	}
	return c
}

func (c *RolloutCluster) init() {
	if c.Operands == nil {
		c.Operands = map[string]rollout.OperandState{}
	}
	if c.Pods == nil {
		c.Pods = map[string]*RolloutPod{}
	}
	if c.Attempts == nil {
		c.Attempts = map[string]int{}
	}
}

func (c *RolloutCluster) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

func (c *RolloutCluster) record(method RolloutMethod, node, installer string) error {
	c.Calls = append(c.Calls, RolloutCall{Method: method, Node: node, Installer: installer})
	return c.Errors[method]
}

// GetInstaller returns the pod's state, InstallerNotFound when there is none.
func (c *RolloutCluster) GetInstaller(_ context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(RolloutGetInstaller, inst.Node, inst.Name); err != nil {
		return rollout.InstallerState{}, err
	}
	if p, ok := c.Pods[inst.Name]; ok {
		st := p.State
		st.Containers = append([]rollout.ContainerTermination(nil), st.Containers...)
		return st, nil
	}
	return rollout.InstallerState{Phase: rollout.InstallerNotFound}, nil
}

// EnsureInstaller creates a pending installer pod unless one of that name exists.
func (c *RolloutCluster) EnsureInstaller(_ context.Context, inst rollout.Installer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err := c.record(RolloutEnsureInstaller, inst.Node, inst.Name); err != nil {
		return err
	}
	if _, ok := c.Pods[inst.Name]; ok {
		return nil
	}
	attempt := c.Attempts[inst.Node]
	c.Attempts[inst.Node]++
	script := InstallerScript{Outcome: InstallerSucceeds}
	if s := c.InstallerScripts[inst.Node]; attempt < len(s) {
		script = s[attempt]
	}
	c.Pods[inst.Name] = &RolloutPod{Installer: inst, Script: script,
		State: rollout.InstallerState{Phase: rollout.InstallerPending, StartTime: c.now()}}
	c.Created = append(c.Created, inst)
	return nil
}

// DeleteInstaller deletes the pod; a missing pod is not an error.
func (c *RolloutCluster) DeleteInstaller(_ context.Context, inst rollout.Installer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(RolloutDeleteInstaller, inst.Node, inst.Name); err != nil {
		return err
	}
	if p, ok := c.Pods[inst.Name]; ok {
		c.Deleted = append(c.Deleted, p.Installer)
		delete(c.Pods, inst.Name)
	}
	return nil
}

// GetOperand returns the node's operand, OperandNotFound when there is none.
func (c *RolloutCluster) GetOperand(_ context.Context, node string) (rollout.OperandState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(RolloutGetOperand, node, ""); err != nil {
		return rollout.OperandState{}, err
	}
	if op, ok := c.Operands[node]; ok {
		return op, nil
	}
	return rollout.OperandState{Phase: rollout.OperandNotFound}, nil
}

// ListNodes lists Nodes with their reachability.
func (c *RolloutCluster) ListNodes(context.Context) ([]rollout.Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.record(RolloutListNodes, "", ""); err != nil {
		return nil, err
	}
	out := make([]rollout.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = rollout.Node{Name: n, Unreachable: c.Unreachable[n]}
	}
	return out, nil
}

// Tick is one step of the simulated kubelet, in pod name order: a pending
// installer starts running (or vanishes, or hangs); a running installer ends
// as scripted, and on success puts the operand of its revision in Pending; a
// pending operand becomes ready (or fails as scripted). Installers on
// unreachable nodes do not move. It returns whether anything moved.
func (c *RolloutCluster) Tick() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	now := c.now()
	moved := false
	for node, op := range c.Operands {
		if op.Phase != rollout.OperandPending || c.Unreachable[node] {
			continue
		}
		if c.OperandHangs[node][op.Revision] {
			continue
		}
		if msg, ok := c.OperandFails[node][op.Revision]; ok {
			op.Phase, op.Message = rollout.OperandFailed, msg
		} else {
			op.Phase, op.ReadySince = rollout.OperandReady, now
		}
		c.Operands[node] = op
		moved = true
	}
	names := make([]string, 0, len(c.Pods))
	for name := range c.Pods {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := c.Pods[name]
		if c.Unreachable[p.Installer.Node] {
			continue
		}
		switch p.State.Phase {
		case rollout.InstallerPending:
			switch p.Script.Outcome {
			case InstallerHangs:
				continue
			case InstallerDisappears:
				delete(c.Pods, name)
			default:
				p.State.Phase = rollout.InstallerRunning
			}
			moved = true
		case rollout.InstallerRunning:
			c.finish(p)
			moved = true
		}
	}
	return moved
}

// finish ends a running installer as scripted.
func (c *RolloutCluster) finish(p *RolloutPod) {
	switch p.Script.Outcome {
	case InstallerFails:
		p.State.Phase = rollout.InstallerFailed
		p.State.Containers = []rollout.ContainerTermination{{Name: "installer", Message: p.Script.Message}}
	case InstallerOOMKilled:
		p.State.Phase = rollout.InstallerFailed
		p.State.Containers = []rollout.ContainerTermination{{Name: "installer", Message: p.Script.Message, OOMKilled: true}}
	default:
		p.State.Phase = rollout.InstallerSucceeded
		c.Operands[p.Installer.Node] = rollout.OperandState{Phase: rollout.OperandPending, Revision: p.Installer.Revision}
	}
}

// SetUnreachable marks a node reachable or not.
func (c *RolloutCluster) SetUnreachable(node string, unreachable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Unreachable == nil {
		c.Unreachable = map[string]bool{}
	}
	c.Unreachable[node] = unreachable
}

// ScriptInstallers appends installer outcomes for a node's next attempts.
func (c *RolloutCluster) ScriptInstallers(node string, scripts ...InstallerScript) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.InstallerScripts == nil {
		c.InstallerScripts = map[string][]InstallerScript{}
	}
	c.InstallerScripts[node] = append(c.InstallerScripts[node], scripts...)
}

// AddNode adds a node to Nodes (no operand yet), unless it is there.
func (c *RolloutCluster) AddNode(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.Nodes, node) {
		c.Nodes = append(c.Nodes, node)
	}
}

// RemoveNode removes a node from Nodes; its pods stay until deleted.
func (c *RolloutCluster) RemoveNode(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Nodes = slices.DeleteFunc(c.Nodes, func(n string) bool { return n == node })
}

// SetOperand sets a node's operand, as a crash or a manual change would.
func (c *RolloutCluster) SetOperand(node string, op rollout.OperandState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.Operands[node] = op
}

// SetError makes a method fail with err (nil: succeed again).
func (c *RolloutCluster) SetError(method RolloutMethod, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Errors == nil {
		c.Errors = map[RolloutMethod]error{}
	}
	c.Errors[method] = err
}

// ResetCalls forgets the recorded calls, keeping their storage: a benchmark
// calls it between syncs so that the log does not grow.
func (c *RolloutCluster) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Calls = c.Calls[:0]
}

// Pod returns a copy of the named installer pod.
func (c *RolloutCluster) Pod(name string) (RolloutPod, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.Pods[name]
	if !ok {
		return RolloutPod{}, false
	}
	return *p, true
}

// Recorded returns a copy of Calls.
func (c *RolloutCluster) Recorded() []RolloutCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]RolloutCall(nil), c.Calls...)
}

// CreatedInstallers returns a copy of Created.
func (c *RolloutCluster) CreatedInstallers() []rollout.Installer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rollout.Installer(nil), c.Created...)
}

// Operand returns a node's operand.
func (c *RolloutCluster) Operand(node string) rollout.OperandState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Operands[node]
}

// RolloutStatusStore is an in-memory rollout.StatusStore with resource
// versions. Conflicts makes the next UpdateStatus calls lose a race: a
// concurrent writer bumps the resource version (without changing the status)
// and the call returns an error marked with converge.Conflict, or the
// apiserver's own 409 when APIConflicts is set. Safe for concurrent use.
type RolloutStatusStore struct {
	mu sync.Mutex
	// Status is the stored status.
	Status rollout.Status
	// ResourceVersion is bumped by every successful write.
	ResourceVersion int64
	// Conflicts is how many of the next UpdateStatus calls fail with a conflict.
	Conflicts int
	// GetErr and UpdateErr make the calls fail.
	GetErr, UpdateErr error
	// Reads counts GetStatus calls.
	Reads int
	// Writes records every successful write, in order.
	Writes []rollout.Status
	// ConflictsReturned counts the conflicts returned.
	ConflictsReturned int
	// APIConflicts makes a conflict the apiserver's 409 (apierrors.IsConflict) instead.
	APIConflicts bool
}

var _ rollout.StatusStore = (*RolloutStatusStore)(nil)

// NewRolloutStatusStore returns a store whose nodes all run revision current,
// with latest as the latest available revision.
func NewRolloutStatusStore(latest, current int32, nodes ...string) *RolloutStatusStore {
	s := &RolloutStatusStore{Status: rollout.Status{LatestAvailableRevision: latest}}
	for _, n := range nodes {
		s.Status.NodeStatuses = append(s.Status.NodeStatuses, rollout.NodeStatus{NodeName: n, CurrentRevision: current})
	}
	return s
}

// GetStatus returns a copy of the status and its resource version.
func (s *RolloutStatusStore) GetStatus(context.Context) (rollout.Status, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reads++
	if s.GetErr != nil {
		return rollout.Status{}, "", s.GetErr
	}
	return *s.Status.DeepCopy(), fmt.Sprint(s.ResourceVersion), nil
}

// UpdateStatus stores st if resourceVersion is current.
func (s *RolloutStatusStore) UpdateStatus(_ context.Context, st rollout.Status, resourceVersion string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.UpdateErr != nil {
		return "", s.UpdateErr
	}
	if s.Conflicts > 0 {
		s.Conflicts--
		s.ResourceVersion++
	}
	if resourceVersion != fmt.Sprint(s.ResourceVersion) {
		s.ConflictsReturned++
		msg := fmt.Errorf("fake: resource version %s is stale, current is %d", resourceVersion, s.ResourceVersion)
		if s.APIConflicts {
			return "", apierrors.NewConflict(schema.GroupResource{Resource: "rollouts"}, "status", msg)
		}
		return "", converge.Conflict(msg)
	}
	s.ResourceVersion++
	s.Status = *st.DeepCopy()
	s.Writes = append(s.Writes, *st.DeepCopy())
	return fmt.Sprint(s.ResourceVersion), nil
}

// Current returns a copy of the stored status.
func (s *RolloutStatusStore) Current() rollout.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.Status.DeepCopy()
}

// WriteCount returns how many writes succeeded.
func (s *RolloutStatusStore) WriteCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Writes)
}

// SetLatest sets the latest available revision, as a revision controller would.
func (s *RolloutStatusStore) SetLatest(rev int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Status.LatestAvailableRevision = rev
	s.ResourceVersion++
}

package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// machine is one machine behind a node name.
type machine struct{ node, uid string }

// fault injects one fault at random.
func (r *simRun) fault() {
	c, rng := r.host.RolloutCluster, r.rng
	nodes := c.Nodes
	pick := func() string { return nodes[rng.IntN(len(nodes))] }
	switch k := rng.IntN(48); {
	case k < 4:
		n := pick()
		away := !c.Unreachable[n]
		c.SetUnreachable(n, away)
		r.logf("fault: %s unreachable=%t", n, away)
	case k < 9:
		n := pick()
		outcome := []fake.InstallerOutcome{fake.InstallerFails, fake.InstallerOOMKilled, fake.InstallerHangs, fake.InstallerDisappears}[rng.IntN(4)]
		r.scriptInstaller(n, c.Attempts[n], outcome)
		r.logf("fault: next installer on %s %s", n, outcome)
	case k < 11:
		on := c.Errors[fake.RolloutDeleteInstaller] == nil
		if on {
			c.SetError(fake.RolloutDeleteInstaller, errors.New("delete refused"))
		} else {
			c.SetError(fake.RolloutDeleteInstaller, nil)
		}
		r.logf("fault: deletes fail=%t", on)
	case k < 12:
		c.SetError(fake.RolloutEnsureInstaller, errors.New("create refused"))
		r.logf("fault: the next creates fail")
	case k < 14:
		n := pick()
		if op, ok := c.Operands[n]; ok {
			op.Phase, op.Message = rollout.OperandFailed, "crashed"
			c.SetOperand(n, op)
			r.logf("fault: operand on %s crashed", n)
		}
	case k < 16:
		n := pick()
		if c.OperandHangs == nil {
			c.OperandHangs = map[string]map[int32]bool{}
		}
		latest := r.host.store.Status.LatestAvailableRevision
		c.OperandHangs[n] = map[int32]bool{latest: true}
		r.logf("fault: operand of revision %d on %s stays not ready", latest, n)
		if r.seed%5 >= 3 {
			// The install after the next (the last good revision's once
			// the engine falls back, or the revision its leader runs)
			// fails too: with either backoff the longer, a failure in
			// fallback keeps both.
			r.scriptInstaller(n, c.Attempts[n]+1, fake.InstallerFails)
			r.logf("fault: installer %d on %s Fails", c.Attempts[n]+2, n)
		}
	case k < 18:
		r.host.store.Conflicts = 1 + rng.IntN(5)
		r.logf("fault: %d write conflicts", r.host.store.Conflicts)
	case k < 21:
		r.host.crashAfter = rng.IntN(12)
		r.logf("fault: crash after %d more host calls", r.host.crashAfter)
	case k < 23:
		back := time.Duration(1+rng.IntN(3600)) * time.Second
		r.clk.SetTime(r.clk.Now().Add(-back))
		r.logf("fault: clock stepped back %v", back)
	case k < 24:
		fwd := time.Duration(1+rng.IntN(3600)) * time.Second
		r.advance(fwd)
		r.logf("fault: clock stepped forward %v", fwd)
	case k < 27:
		if latest := r.host.store.Status.LatestAvailableRevision; latest < simMaxLatest {
			r.host.store.SetLatest(latest + 1)
			r.logf("fault: revision %d arrives", latest+1)
		}
	case k < 28:
		name := fmt.Sprintf("n%d", r.nodeSeq)
		r.nodeSeq++
		c.AddNode(name)
		if c.UIDs != nil {
			c.UIDs[name] = name + "-machine-0"
		}
		if rng.IntN(2) == 0 { // a machine that comes with an operand of its own
			rev := 1 + rng.Int32N(r.host.store.Status.LatestAvailableRevision)
			c.SetOperand(name, rollout.OperandState{Phase: rollout.OperandReady, Revision: rev, ReadySince: r.clk.Now()})
			c.LastKnownGood[name] = rev
			r.logf("fault: node %s added, running revision %d", name, rev)
		} else {
			r.logf("fault: node %s added", name)
		}
	case k < 29:
		if len(nodes) > 2 {
			n := pick()
			c.RemoveNode(n)
			r.logf("fault: node %s removed", n)
		}
	case k < 32:
		if c.UIDs != nil {
			n := pick()
			c.ReplaceNode(n)
			r.replacedAt[n] = r.host.store.WriteCount()
			for k := range r.failures {
				if k.node == n {
					delete(r.failures, k)
				}
			}
			for k := range r.ledger {
				if k.node == n {
					delete(r.ledger, k)
				}
			}
			delete(r.installed, n)
			r.logf("fault: node %s replaced by machine %s", n, c.UIDs[n])
		}
	case k < 35:
		// A lost static pod manifest: only an operand that runs ready on a
		// node not installing, since nothing else would ever start one.
		n := pick()
		st, _ := r.host.store.Status.Node(n)
		if op := c.Operand(n); op.Phase == rollout.OperandReady && !st.InTransition() {
			c.RemoveOperand(n)
			r.logf("fault: operand on %s lost", n)
		}
	case k < 40:
		if r.gate != nil {
			n := pick()
			r.gate.denied[n] = !r.gate.denied[n]
			r.logf("fault: gate denies %s=%t", n, r.gate.denied[n])
		}
	}
}

// quiesce stops every fault: nodes reachable, scripts and errors gone, hung
// installers and operands move on, crashed operands restarted by the kubelet,
// the gate admits every node.
func (r *simRun) quiesce() {
	c := r.host.RolloutCluster
	c.Unreachable = nil
	c.InstallerScripts = nil
	c.Errors = nil
	c.OperandHangs = nil
	for _, p := range c.Pods {
		p.Script = fake.InstallerScript{}
	}
	for n, op := range c.Operands {
		if op.Phase == rollout.OperandFailed {
			op.Phase, op.ReadySince, op.Message = rollout.OperandReady, r.clk.Now(), ""
			c.Operands[n] = op
		}
	}
	if r.gate != nil {
		r.gate.denied = map[string]bool{}
	}
	r.host.store.Conflicts = 0
	r.host.crashAfter, r.host.dead = -1, false
	r.quiet = true
	r.logf("faults stop")
}

// decision is what Decide makes of the persisted status and the world now,
// for a step log that needs more than describe.
func (r *simRun) decision() string {
	c := r.host.RolloutCluster
	obs := rollout.Observation{}
	st := r.host.store.Current()
	for _, n := range c.Nodes {
		o := rollout.NodeObservation{UID: c.UIDs[n], Operand: c.Operand(n), Unreachable: c.Unreachable[n]}
		if o.Operand.Phase == 0 && o.Operand.Revision == 0 {
			o.Operand = rollout.OperandState{}
		}
		if ns, ok := st.Node(n); ok && ns.InTransition() {
			o.Installer, _ = c.GetInstaller(context.Background(), rollout.Installer{Name: rollout.InstallerName(ns), Node: n, Revision: ns.TargetRevision})
		}
		obs[n] = o
	}
	d, err := rollout.Decide(rollout.Input{Status: st, Observation: obs, Policy: r.policy, Now: r.clk.Now()})
	if err != nil {
		return err.Error()
	}
	return strings.ReplaceAll(d.String(), "\n", " / ")
}

// describe renders the status and the world in one line, for the step log.
func (r *simRun) describe() string {
	var b strings.Builder
	st := r.host.store.Status
	for _, n := range st.NodeStatuses {
		fmt.Fprintf(&b, "%s %d→%d", n.NodeName, n.CurrentRevision, n.TargetRevision)
		if n.InstallerOrderedTime != nil {
			b.WriteString(" ordered")
		}
		if n.InstalledTime != nil {
			b.WriteString(" installed")
		}
		if n.LastFailedRevision != 0 {
			fmt.Fprintf(&b, " failed %d×%d+%d %s", n.LastFailedRevision, n.LastFailedCount, n.LastFallbackCount, n.LastFailedReason)
		}
		if n.RegressedRevision != 0 || n.OperandMissing {
			fmt.Fprintf(&b, " regressed %d missing %t", n.RegressedRevision, n.OperandMissing)
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "to delete %v", st.InstallersToDelete)
	if st.HeldSince != nil {
		fmt.Fprintf(&b, " held since %s", st.HeldSince.Sub(t0))
	}
	for _, c := range st.Conditions {
		if c.Type == conditions.TypeDegraded && c.Status == metav1.ConditionTrue {
			fmt.Fprintf(&b, " Degraded %s", c.Reason)
		}
	}
	b.WriteString(" | world:")
	c := r.host.RolloutCluster
	for _, n := range c.Nodes {
		op, ok := c.Operands[n]
		fmt.Fprintf(&b, " %s(%s", n, c.UIDs[n])
		if ok {
			fmt.Fprintf(&b, " %s@%d", op.Phase, op.Revision)
			if op.Fallback != nil {
				fmt.Fprintf(&b, " fallback-for %d", op.Fallback.ForRevision)
			}
		}
		if c.Unreachable[n] {
			b.WriteString(" unreachable")
		}
		b.WriteString(")")
	}
	names := make([]string, 0, len(c.Pods))
	for name := range c.Pods {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, " %s:%s", name, c.Pods[name].State.Phase)
	}
	return b.String()
}

// simSnapshot is what the world ran at one moment.
type simSnapshot struct {
	operands    map[string]rollout.OperandState
	unreachable map[string]bool
	pods        map[string]simPod
	livePods    map[string]int // by node
}

// simPod is what a snapshot keeps of an installer pod.
type simPod struct {
	node    string
	rev     int32
	phase   rollout.InstallerPhase
	outcome fake.InstallerOutcome
}

func (p simPod) live() bool {
	return p.phase == rollout.InstallerPending || p.phase == rollout.InstallerRunning
}

// snapshot records the world into s, reusing its maps.
func (r *simRun) snapshot(s *simSnapshot) simSnapshot {
	c := r.host.RolloutCluster
	if s.operands == nil {
		*s = simSnapshot{operands: map[string]rollout.OperandState{}, unreachable: map[string]bool{}, pods: map[string]simPod{}, livePods: map[string]int{}}
	}
	clear(s.operands)
	clear(s.unreachable)
	clear(s.pods)
	clear(s.livePods)
	for n, op := range c.Operands {
		s.operands[n] = op
	}
	for n, u := range c.Unreachable {
		s.unreachable[n] = u
	}
	for name, p := range c.Pods {
		sp := simPod{node: p.Installer.Node, rev: p.Installer.Revision, phase: p.State.Phase, outcome: p.Script.Outcome}
		s.pods[name] = sp
		if sp.live() {
			s.livePods[sp.node]++
		}
	}
	return *s
}

// down reports whether a node is unavailable in the world: unreachable, its
// operand not ready, or an installer pod of it can still run.
func (s simSnapshot) down(node string) bool {
	return s.unreachable[node] || s.operands[node].Phase != rollout.OperandReady || s.livePods[node] > 0
}

// converged reports whether every node of the world runs the latest
// revision or a newer one, and none a fallback.
func (r *simRun) converged(s simSnapshot, latest int32) bool {
	for _, n := range r.host.Nodes {
		op, ok := s.operands[n]
		if !ok || op.Revision < latest || op.Fallback != nil {
			return false
		}
	}
	return true
}

// moving reports whether the kubelet of a reachable node still has work: an
// installer pod that can still run, an operand starting, or an installer
// that succeeded whose operand is not in place yet.
func (r *simRun) moving(s simSnapshot) bool {
	for _, n := range r.host.Nodes {
		if s.unreachable[n] {
			continue
		}
		op, found := s.operands[n]
		if s.livePods[n] > 0 || op.Phase == rollout.OperandPending {
			return true
		}
		if p, ok := s.pods[r.lastCreated[n]]; ok && p.phase == rollout.InstallerSucceeded && (!found || op.Revision != p.rev) {
			return true
		}
	}
	return false
}

// outage keeps one node unreachable, everything else quiet, while a new
// revision arrives, for longer than HoldDegradedAfter: the hold must turn
// Degraded (checked after every sync), and the node then comes back.
func (r *simRun) outage(ctx context.Context) error {
	c := r.host.RolloutCluster
	n := c.Nodes[r.rng.IntN(len(c.Nodes))]
	if latest := r.host.store.Status.LatestAvailableRevision; latest < simMaxLatest {
		r.host.store.SetLatest(latest + 1)
	}
	c.SetUnreachable(n, true)
	r.logf("outage: %s unreachable while revision %d rolls out", n, r.host.store.Status.LatestAvailableRevision)
	for end := r.fwd + r.holdAfter + 15*time.Minute; r.fwd < end; {
		if err := r.step(ctx); err != nil {
			return err
		}
	}
	c.SetUnreachable(n, false)
	r.logf("outage over: %s is back", n)
	return nil
}

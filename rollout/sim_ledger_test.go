package rollout_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// simFailure is an attempt the world saw fail: when (in forward time) and
// the shortest wait the policy allows before it is tried again.
type simFailure struct {
	at       time.Duration
	wait     time.Duration
	fallback bool
}

// nodeRev is a revision on a node.
type nodeRev struct {
	node string
	rev  int32
}

// checkEvents checks the events of the writes since the last check: a start
// says the revision the node's operand ran, and every transition persisted
// is reported by exactly one event.
func (r *simRun) checkEvents(before simSnapshot) error {
	for _, e := range r.events {
		var node string
		var from, to int32
		if e.Reason != rollout.ReasonNodeTargetRevisionChanged || !strings.Contains(e.Message, "because starting") && !strings.Contains(e.Message, "because retrying") {
			continue
		}
		if _, err := fmt.Sscanf(e.Message, "Updating node %q from revision %d to %d", &node, &from, &to); err != nil {
			return fmt.Errorf("event %q: %v", e.Message, err)
		}
		if op, ok := before.operands[node]; ok && op.Phase == rollout.OperandReady && op.Fallback == nil && op.Revision != from {
			return fmt.Errorf("event %q, but the operand ran revision %d", e.Message, op.Revision)
		}
	}

	// A fallback the startup monitor made is reported once: an event for a
	// fallback pod already reported, of a node the status kept since, is
	// a second fallback that did not happen.
	for _, e := range r.events {
		var node string
		if e.Reason != rollout.ReasonOperandFailedFallback || !strings.Contains(e.Message, "fell back from revision") {
			continue
		}
		if _, err := fmt.Sscanf(e.Message, "Node %q fell back", &node); err != nil {
			return fmt.Errorf("event %q: %v", e.Message, err)
		}
		pod := before.operands[node].Fallback
		if pod == nil {
			return fmt.Errorf("event %q, but node %s runs no fallback", e.Message, node)
		}
		if _, kept := r.prev.Node(node); kept && r.reported[pod] {
			return fmt.Errorf("event %q, but that fallback was reported before", e.Message)
		}
		r.reported[pod] = true
	}

	writes := r.host.store.Writes
	prev := r.prev
	var want [6]int
	for _, w := range writes[r.written:] {
		for _, n := range w.NodeStatuses {
			old, ok := prev.Node(n.NodeName)
			if !ok || (old.NodeUID != "" && old.NodeUID != n.NodeUID) {
				// A node that joins, or a new machine, starts at the
				// revision it runs, with no history.
				old = rollout.NodeStatus{NodeName: n.NodeName, NodeUID: n.NodeUID, CurrentRevision: n.CurrentRevision}
			}
			fellBack := n.LastFailedReason == rollout.ReasonOperandFailedFallback &&
				(n.LastFallbackCount != old.LastFallbackCount || n.LastFailedRevision != old.LastFailedRevision)
			failedNow := n.LastFailedTime != nil && !fellBack && (old.LastFailedTime == nil || n.LastFailedCount != old.LastFailedCount || n.LastFailedRevision != old.LastFailedRevision)
			switch {
			case fellBack:
				want[0]++
				r.failed(n.NodeName, n.LastFailedRevision, r.minFallback)
			case n.CurrentRevision > old.CurrentRevision:
				want[1]++
			}
			if n.InTransition() && (!old.InTransition() || n.TargetRevision != old.TargetRevision) && !(fellBack && n.TargetRevision == n.CurrentRevision) {
				want[2]++
			}
			if failedNow {
				want[3]++
				if err := r.inLedger(n); err != nil {
					return err
				}
			}
			if n.RegressedRevision != 0 && n.RegressedRevision != old.RegressedRevision {
				want[4]++
			}
			if n.OperandMissing && !old.OperandMissing {
				want[5]++
			}
		}
		prev = w
	}
	r.written, r.prev = len(writes), r.host.store.Status
	var got [6]int
	for _, e := range r.events {
		switch e.Reason {
		case rollout.ReasonOperandFailedFallback:
			got[0]++
		case rollout.ReasonNodeCurrentRevisionChanged:
			got[1]++
		case rollout.ReasonNodeTargetRevisionChanged:
			got[2]++
		case rollout.ReasonInstallerPodFailed, rollout.ReasonInstallerPodDisappeared, rollout.ReasonInstallerCreateFailed,
			rollout.ReasonOperandFailed, rollout.ReasonOperandNotReady:
			got[3]++
		case rollout.ReasonNodeRevisionRegressed:
			got[4]++
		case rollout.ReasonNodeOperandMissing:
			got[5]++
		}
	}
	r.events = nil
	if got != want {
		return fmt.Errorf("events do not match the persisted transitions (fallback, current, target, failure, regressed, missing): %v events for %v", got, want)
	}
	return nil
}

// inLedger checks a failure the status records now against the ledger of
// failures the world showed: an installer that ran and failed, one that
// vanished after a sync was shown it and lived to record it, a create the
// host refused. Each ledger entry accounts for one recorded failure. The
// failures the engine decides by its own clock (timeouts, fallbacks) and
// the operand's are judged by the other oracles.
func (r *simRun) inLedger(n rollout.NodeStatus) error {
	switch {
	case n.LastFailedReason == rollout.ReasonInstallerPodFailed && !slices.ContainsFunc(n.LastFailedErrors, func(e string) bool {
		return strings.Contains(e, "did not finish within")
	}):
	case n.LastFailedReason == rollout.ReasonInstallerPodDisappeared, n.LastFailedReason == rollout.ReasonInstallerCreateFailed:
	default:
		return nil
	}
	k := nodeRev{n.NodeName, n.LastFailedRevision}
	if r.ledger[k] == 0 {
		return fmt.Errorf("the status records a failed attempt of revision %d on %s (%s %v) the world never showed",
			k.rev, k.node, n.LastFailedReason, n.LastFailedErrors)
	}
	r.ledger[k]--
	return nil
}

// witnessed enters a failure the world showed into the ledger.
func (r *simRun) witnessed(node string, rev int32) { r.ledger[nodeRev{node, rev}]++ }

// failed records a failed attempt of rev on node: the first since the last
// attempt counts (the engine records a failure once), unless a fallback
// follows another failure: the retry then waits the fallback backoff from
// the fallback.
func (r *simRun) failed(node string, rev int32, wait time.Duration) {
	k := nodeRev{node, rev}
	fallback := wait == r.minFallback
	if f, ok := r.failures[k]; ok && (f.fallback || !fallback) {
		return
	}
	r.failures[k] = simFailure{at: r.fwd, wait: wait, fallback: fallback}
}

// checkTick verifies what one kubelet tick did: no installer that ran took
// a machine below a revision it ran ready (unless a fallback the status
// records, or one the rollout decided must go), and records the failures the
// world saw and what each machine ran.
func (r *simRun) checkTick(before simSnapshot) error {
	c := r.host.RolloutCluster
	st := r.host.store.Status
	for name, was := range before.pods {
		p, exists := c.Pods[name]
		node := was.node
		m := machine{node, c.UIDs[node]}
		if r.podMachine[name] != m.uid {
			continue // created for the machine's predecessor: not its history
		}
		// An installer the engine had already retired (timed out, or
		// superseded) that fails later is no attempt of the node failing.
		retired := slices.ContainsFunc(st.InstallersToDelete, func(i rollout.Installer) bool { return i.Name == name })
		switch {
		case !exists && was.phase == rollout.InstallerPending && was.outcome == fake.InstallerDisappears && !retired && r.host.shown[name]:
			r.failed(node, was.rev, r.minRetry)
			r.witnessed(node, was.rev)
		case !exists:
		case was.phase == rollout.InstallerRunning && p.State.Phase == rollout.InstallerFailed && !retired:
			r.failed(node, was.rev, r.minRetry)
			r.witnessed(node, was.rev)
		case was.phase == rollout.InstallerRunning && p.State.Phase == rollout.InstallerSucceeded:
			r.installed[node] = was.rev
			if retired {
				r.lateInstall[node] = was.rev
			}
			// 2. No downgrade.
			if rev := was.rev; rev < r.maxReady[m] {
				n, _ := st.Node(node)
				fallback := n.TargetRevision == rev && n.CurrentRevision == rev && n.LastFailedReason == rollout.ReasonOperandFailedFallback
				if !fallback && !retired {
					return fmt.Errorf("installer %s installed revision %d on %s, which ran revision %d already", name, rev, node, r.maxReady[m])
				}
			}
		}
	}
	for node, op := range c.Operands {
		m := machine{node, c.UIDs[node]}
		was, found := before.operands[node]
		switch {
		case op.Phase == rollout.OperandReady && op.Fallback == nil:
			r.maxReady[m] = max(r.maxReady[m], op.Revision)
			delete(r.failures, nodeRev{node, op.Revision})
		case op.Phase == rollout.OperandFailed && found && was.Phase == rollout.OperandPending:
			if p, ok := c.Pods[r.lastCreated[node]]; ok && p.Installer.Revision == op.Revision && p.State.Phase == rollout.InstallerSucceeded {
				r.failed(node, op.Revision, r.minRetry)
			}
		}
	}
	return nil
}

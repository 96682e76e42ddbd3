package rollout_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/rollout"
)

// simMaxSkew is how far a replica's clock may run from the world's.
const simMaxSkew = 5 * time.Minute

// skew draws the clock of the next replica: in the schedules that have
// replicas whose clocks differ, up to simMaxSkew either way while faults
// last. spread is how far apart two replicas' clocks have been, by which
// a retry may come early in world time.
func (r *simRun) skew() {
	r.replica.off = 0
	if r.seed%4 == 1 && !r.quiet {
		r.replica.off = time.Duration(r.rng.Int64N(int64(2*simMaxSkew+1))) - simMaxSkew
		r.logf("replica clock off by %v", r.replica.off)
	}
	r.skewLow, r.skewHigh = min(r.skewLow, r.replica.off), max(r.skewHigh, r.replica.off)
}

// spread is how far apart the clocks of two replicas have been.
func (r *simRun) spread() time.Duration { return r.skewHigh - r.skewLow }

// checkWaits: (9) every wait ends within its own length, by the clock of
// the replica that wrote it, however the clock stepped: after a sync that
// wrote, a node's retry time is no further than its backoff for its count
// of failures (both backoffs for a fallback) and no persisted time lies in
// the replica's future; the requeue is no longer than the longest wait the
// policy has.
func (r *simRun) checkWaits(st rollout.Status, res converge.Result, wrote bool) error {
	if !wrote {
		return nil
	}
	now := r.replica.Now()
	p := r.policy
	installer := p.InstallerBackoff.WithDefaults(converge.Backoff{Initial: metav1.Duration{Duration: simInstallerBackoff},
		FactorPercent: 150, Max: metav1.Duration{Duration: 10 * time.Minute}})
	fallback := p.FallbackBackoff.WithDefaults(converge.Backoff{Initial: metav1.Duration{Duration: simFallbackBackoff},
		FactorPercent: 200, Max: metav1.Duration{Duration: 2 * time.Hour}})
	for _, n := range st.NodeStatuses {
		if n.RetryTime == nil {
			continue
		}
		wait := installer.Delay(n.LastFailedCount, 1)
		if n.LastFailedReason == rollout.ReasonOperandFailedFallback || n.LastFallbackCount > 0 {
			wait = max(wait, fallback.Delay(n.LastFallbackCount, 1))
		}
		if left := n.RetryTime.Sub(now); left > wait+time.Second {
			return fmt.Errorf("node %s retries in %v, longer than its backoff %v", n.NodeName, left, wait)
		}
	}
	longest := max(installer.Delay(math.MaxInt32, 1), fallback.Delay(math.MaxInt32, 1), r.holdAfter, p.InstallerPendingTimeout.Duration,
		p.OperandReadyTimeout.Duration, p.FallbackTimeout.Duration, p.MinReadyDuration.Duration)
	if res.RequeueAfter > longest+time.Second {
		return fmt.Errorf("requeue after %v, longer than any wait of the policy (%v)", res.RequeueAfter, longest)
	}
	for _, n := range st.NodeStatuses {
		for _, t := range []*metav1.Time{n.InstallerOrderedTime, n.InstalledTime, n.LastFailedTime} {
			if t != nil && t.After(now) {
				return fmt.Errorf("node %s has a time %s in the future of the replica that wrote it (%s)", n.NodeName, t.UTC(), now.UTC())
			}
		}
	}
	if st.HeldSince != nil && st.HeldSince.After(now) {
		return fmt.Errorf("held since %s, in the future of the replica that wrote it (%s)", st.HeldSince.UTC(), now.UTC())
	}
	return nil
}

// checkMachines: (10) a replaced machine's history is never its own: the
// current revision the status gives a node is one its machine ran ready
// (or runs), and a failure it records on a machine is one that machine
// showed: none of its predecessor's.
func (r *simRun) checkMachines(st rollout.Status, before, after simSnapshot) error {
	c := r.host.RolloutCluster
	if c.UIDs == nil {
		return nil
	}
	for _, n := range st.NodeStatuses {
		uid, ok := c.UIDs[n.NodeName]
		if !ok {
			continue
		}
		ran := r.maxReady[machine{n.NodeName, uid}]
		for _, s := range []simSnapshot{before, after} {
			if op := s.operands[n.NodeName]; op.Phase != rollout.OperandNotFound || op.Revision != 0 {
				ran = max(ran, op.Revision)
			}
		}
		if n.NodeUID == uid && n.CurrentRevision > ran {
			return fmt.Errorf("node %s (machine %s) is at revision %d, but that machine never ran above revision %d", n.NodeName, uid, n.CurrentRevision, ran)
		}
		if n.NodeUID != "" && n.NodeUID != uid && r.replacedAt[n.NodeName] < r.host.store.WriteCount() {
			return fmt.Errorf("node %s keeps the status of machine %s, replaced by %s", n.NodeName, n.NodeUID, uid)
		}
	}
	return nil
}

// checkRefusal: (12) a create the host refused is its node's failed
// attempt, recorded by the sync that made it unless the process died or a
// conflict lost the write: a refusal that never ends backs off and is
// bounded, not retried at once forever.
func (r *simRun) checkRefusal(inst rollout.Installer, lost bool) error {
	n, ok := r.host.store.Status.Node(inst.Node)
	if lost || !ok || n.TargetRevision != inst.Revision {
		return nil
	}
	if n.LastFailedReason != rollout.ReasonInstallerCreateFailed || n.LastFailedRevision != inst.Revision || n.InstallerOrderedTime != nil {
		return fmt.Errorf("the host refused to create %s, but the status does not record it as a failed attempt: %+v", inst.Name, n)
	}
	return nil
}

// checkPending: (13) an installer the world keeps pending, the attempt its
// node's status records, created before the last sync, is a hold on its
// node (InstallerPending) in the status written after the sync that saw it.
func (r *simRun) checkPending(st rollout.Status, before simSnapshot) error {
	for name, p := range before.pods {
		n, ok := st.Node(p.node)
		if p.phase != rollout.InstallerPending || !ok || rollout.InstallerName(n) != name || n.InstalledTime != nil || !r.host.shown[name] {
			continue
		}
		if !slices.ContainsFunc(st.Holds, func(h converge.Hold) bool { return h.Reason == rollout.HoldInstallerPending && h.Object == p.node }) &&
			len(st.Holds) < converge.MaxHolds {
			return fmt.Errorf("installer %s stays pending, but no hold says so: %+v", name, st.Holds)
		}
	}
	return nil
}

// checkWrites: (11) the conditions of every status written agree with the
// node statuses written beside them: Available is True exactly when a node
// has a current revision, Progressing is False exactly when every node is
// at the latest revision or above, not in transition, regressed or missing,
// a node failing its target (or a regressed or missing operand) is
// Degraded, and Progressing says every hold of the write.
func (r *simRun) checkWrites(writes []rollout.Status) error {
	for _, w := range writes {
		active, done, failing := false, true, ""
		for _, n := range w.NodeStatuses {
			active = active || n.CurrentRevision != 0
			if n.InTransition() || n.CurrentRevision < w.LatestAvailableRevision || n.RegressedRevision != 0 || n.OperandMissing {
				done = false
			}
			if n.RegressedRevision != 0 || n.OperandMissing ||
				(n.InTransition() && n.TargetRevision == n.LastFailedRevision && n.LastFailedCount > 0 && n.CurrentRevision < n.TargetRevision) {
				failing = n.NodeName
			}
		}
		if len(w.NodeStatuses) > 0 && conditions.IsTrue(w.Conditions, conditions.TypeAvailable) != active {
			return fmt.Errorf("a write says Available %t, but its nodes say %t", !active, active)
		}
		if len(w.NodeStatuses) > 0 && conditions.IsFalse(w.Conditions, conditions.TypeProgressing) != done {
			return fmt.Errorf("a write says Progressing False is %t, but its nodes say done is %t", !done, done)
		}
		if failing != "" && !conditions.IsTrue(w.Conditions, conditions.TypeDegraded) {
			return fmt.Errorf("a write records node %s failing, but Degraded is not True", failing)
		}
		progressing, _ := conditions.Get(w.Conditions, conditions.TypeProgressing)
		for _, h := range w.Holds {
			if !strings.Contains(progressing.Message, h.Message) {
				return fmt.Errorf("a write holds %+v, but its Progressing does not say it: %q", h, progressing.Message)
			}
		}
	}
	return nil
}

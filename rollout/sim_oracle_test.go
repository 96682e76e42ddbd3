package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/rollout"
)

// checkSync verifies the invariants after one sync: against what the world
// runs, never through the engine's own helpers.
func (r *simRun) checkSync(before, after simSnapshot, created []rollout.Installer, res converge.Result, ok bool) error {
	st := r.host.store.Status // the store replaces, never mutates, what it holds
	wrote := len(r.host.store.Writes) > r.written
	if err := st.Validate(); err != nil {
		return fmt.Errorf("persisted status is invalid: %w", err)
	}
	for _, c := range st.Conditions {
		if err := conditions.Validate(c); err != nil {
			return fmt.Errorf("persisted condition is invalid: %w", err)
		}
	}
	deleting := map[string]bool{}
	for _, inst := range st.InstallersToDelete {
		deleting[inst.Name] = true
	}

	// 1. Budget: taking a healthy node down never makes more nodes
	// unavailable than MaxUnavailable.
	started := ""
	for _, inst := range created {
		if !before.down(inst.Node) {
			started = inst.Node
		}
	}
	if started != "" {
		down := 0
		for _, n := range r.host.Nodes {
			if after.down(n) {
				down++
			}
		}
		if down > r.budget {
			return fmt.Errorf("started healthy node %s: %d nodes are unavailable after it, maxUnavailable %d", started, down, r.budget)
		}
	}

	// 3. No leftover: every live installer pod is the one its node's
	// decision wants, or one the decision wants gone.
	for name, p := range after.pods {
		if !p.live() || deleting[name] {
			continue
		}
		n, found := st.Node(p.node)
		if !found || n.TargetRevision != p.rev || r.lastCreated[p.node] != name {
			return fmt.Errorf("installer %s (revision %d on %s) can still run, but node %s targets revision %d and it is not recorded for deletion",
				name, p.rev, p.node, p.node, n.TargetRevision)
		}
	}

	for _, inst := range created {
		n, _ := st.Node(inst.Node)
		if n.TargetRevision != inst.Revision || deleting[inst.Name] {
			return fmt.Errorf("created installer %s, but node %s targets %d", inst.Name, inst.Node, n.TargetRevision)
		}
		// 4. Backoff: an attempt the world saw fail is not tried again
		// before the policy's shortest backoff (less the second that
		// persisted times are truncated to).
		if f, ok := r.failures[nodeRev{inst.Node, inst.Revision}]; ok && r.fwd-f.at < f.wait-time.Second-r.spread() {
			return fmt.Errorf("retried revision %d on %s %v after the world saw it fail, the backoff is at least %v", inst.Revision, inst.Node, r.fwd-f.at, f.wait)
		}
		// A node in fallback whose install of its last good revision
		// failed since retries the revision it fell back from no sooner
		// than the installer backoff of that failure either.
		if f, ok := r.failures[nodeRev{inst.Node, inst.Revision}]; ok && f.fallback {
			good := r.host.LastKnownGood[inst.Node]
			for k, g := range r.failures {
				if k.node == inst.Node && k.rev == good && k.rev < inst.Revision && !g.fallback && g.at >= f.at && r.fwd-g.at < g.wait-time.Second-r.spread() {
					return fmt.Errorf("retried revision %d on %s %v after installing revision %d failed, the installer backoff is at least %v",
						inst.Revision, inst.Node, r.fwd-g.at, k.rev, g.wait)
				}
			}
		}
		f, fellBack := r.failures[nodeRev{inst.Node, inst.Revision}]
		fellBack = fellBack && f.fallback
		for k := range r.failures {
			if k.node == inst.Node && inst.Revision >= k.rev {
				delete(r.failures, k) // the attempt after the failure, or a newer revision
			}
		}
		// Fallback: no node that is up starts a revision another node's
		// startup monitor fell back from, unless it fell back from it too
		// (one of them retries it first).
		if own := before.operands[inst.Node].Fallback; !before.down(inst.Node) && !fellBack && (own == nil || own.ForRevision != inst.Revision) {
			for _, m := range r.host.Nodes {
				if op := before.operands[m]; m != inst.Node && op.Fallback != nil && op.Fallback.ForRevision == inst.Revision {
					return fmt.Errorf("started %s on %s, which is up, while %s runs a fallback from revision %d", inst.Name, inst.Node, m, inst.Revision)
				}
			}
		}
		// The gate admits every start: a node not installing before.
		if prev, ok := r.prev.Node(inst.Node); r.gate != nil && (!ok || !prev.InTransition()) && !r.gate.admitted[inst.Name] {
			return fmt.Errorf("started %s on %s without the gate's admission", inst.Name, inst.Node)
		}
	}
	if err := r.checkWrites(r.host.store.Writes[r.written:]); err != nil {
		return err
	}
	if err := r.checkEvents(before); err != nil {
		return err
	}
	if err := r.checkWaits(st, res, ok && wrote); err != nil {
		return err
	}
	if err := r.checkMachines(st, before, after); err != nil {
		return err
	}
	if !ok {
		return nil
	}

	if err := checkHolds(st, r.decided); err != nil {
		return err
	}
	if err := r.checkPending(st, before); err != nil {
		return err
	}

	// 5. Honesty: conditions agree with the world they were decided from.
	latest := st.LatestAvailableRevision
	if conditions.IsFalse(st.Conditions, conditions.TypeProgressing) && !r.converged(before, latest) {
		return fmt.Errorf("progressing is False, but the world does not run revision %d everywhere", latest)
	}
	now := r.clk.Now()
	deadline := r.deadline
	r.deadline = time.Time{}
	if res.RequeueAfter > 0 {
		r.deadline = now.Add(res.RequeueAfter)
	}
	world := r.fingerprint(before, latest)
	changed := world != r.lastWorld
	r.lastWorld = world
	switch {
	case r.converged(before, latest) || r.moving(after) || changed:
		r.stuckSince = nil
	case r.stuckSince == nil || r.stuckSince.After(now):
		// The hold starts once the engine had its chance: at a sync past
		// the time it asked to look again.
		if deadline.IsZero() || !now.Before(deadline) {
			r.stuckSince = &now
		}
	case now.Sub(*r.stuckSince) >= r.holdAfter+r.spread() && !conditions.IsTrue(st.Conditions, conditions.TypeDegraded):
		return fmt.Errorf("nothing has moved towards revision %d for %v, longer than holdDegradedAfter %v, and Degraded is not True",
			latest, now.Sub(*r.stuckSince), r.holdAfter)
	}
	return nil
}

// goDuration matches a Go duration ("15s", "1m30s", "18.5s") in a text.
var goDuration = regexp.MustCompile(`(^|[^\w.-])\d+(\.\d+)?(ns|us|µs|ms|s|m|h)(\d|\b)`)

// checkHolds: (8) the persisted holds are those the decision rendered, as
// a status keeps them (sorted, each once, at most converge.MaxHolds), each
// of a reason rollout.HoldReasons lists, with no duration in its message,
// and Progressing says each of them.
func checkHolds(st rollout.Status, d rollout.Decision) error {
	if want := converge.SortHolds(slices.Clone(d.Holds)); !slices.Equal(st.Holds, want) {
		return fmt.Errorf("persisted holds %+v, but the decision rendered %+v", st.Holds, want)
	}
	if len(st.Holds) > converge.MaxHolds {
		return fmt.Errorf("%d holds persisted, more than %d", len(st.Holds), converge.MaxHolds)
	}
	progressing, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
	for i, h := range st.Holds {
		switch {
		case i > 0 && converge.CompareHolds(st.Holds[i-1], h) >= 0:
			return fmt.Errorf("persisted holds not sorted, or one twice: %+v", st.Holds)
		case !slices.Contains(rollout.HoldReasons(), h.Reason):
			return fmt.Errorf("hold %+v has a reason rollout.HoldReasons does not list", h)
		case goDuration.MatchString(h.Message):
			return fmt.Errorf("hold %+v has a duration in its message", h)
		case progressing.Status != metav1.ConditionTrue || !strings.Contains(progressing.Message, h.Message):
			return fmt.Errorf("hold %+v is not in Progressing: %s %q", h, progressing.Status, progressing.Message)
		}
	}
	return nil
}

// fingerprint renders what a sync sees of the world: a sync that sees the
// same world as the one before it saw a world in which nothing moved.
func (r *simRun) fingerprint(s simSnapshot, latest int32) string {
	b := r.fp[:0]
	b = strconv.AppendInt(b, int64(latest), 10)
	for _, n := range r.host.Nodes {
		op := s.operands[n]
		b = append(b, '|')
		b = append(b, n...)
		b = append(b, ' ')
		b = append(b, r.host.UIDs[n]...)
		b = strconv.AppendBool(append(b, ' '), s.unreachable[n])
		b = strconv.AppendInt(append(b, ' '), int64(op.Phase), 10)
		b = strconv.AppendInt(append(b, '/'), int64(op.Revision), 10)
		b = strconv.AppendBool(append(b, ' '), op.Fallback != nil)
		b = strconv.AppendInt(append(b, ' '), int64(s.livePods[n]), 10)
	}
	r.fp = b
	return string(b)
}

// checkNoChurn: once a sync's own actions have been seen (a few more syncs
// at the same time, as long as the last one acted), a sync a second later,
// in a world that did not change, writes nothing, unless the previous sync
// asked to look again within that second.
func (r *simRun) checkNoChurn(ctx context.Context, res converge.Result, idle bool) error {
	if !idle {
		var err error
		if res, idle, err = r.sync(ctx); err != nil {
			return err
		}
	}
	if !idle || (res.RequeueAfter > 0 && res.RequeueAfter <= time.Second) || r.host.crashAfter >= 0 || r.host.store.Conflicts > 0 {
		return nil
	}
	writes := r.host.store.WriteCount()
	r.advance(time.Second)
	if _, _, err := r.sync(ctx); err != nil {
		return err
	}
	if w := r.host.store.WriteCount() - writes; w > 0 {
		before, _ := json.Marshal(r.host.store.Writes[writes-1])
		after, _ := json.Marshal(r.host.store.Writes[writes])
		return fmt.Errorf("a sync one second after a quiet one, in a world that did not change, wrote the status %d times:\n%s\n%s", w, before, after)
	}
	return nil
}

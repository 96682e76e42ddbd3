package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

// bytesSource hands out fuzz bytes, zeros once exhausted.
type bytesSource struct {
	b []byte
	i int
}

func (s *bytesSource) next(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i]) % n
	s.i++
	return v
}

var (
	fuzzOperandPhases   = []OperandPhase{OperandNotFound, OperandPending, OperandReady, OperandFailed}
	fuzzInstallerPhases = []InstallerPhase{InstallerNotFound, InstallerPending, InstallerRunning, InstallerSucceeded, InstallerFailed}
)

// fuzzInput builds a status, observation and policy from fuzz bytes.
func fuzzInput(data []byte) (Status, Observation, Policy, time.Time) {
	src := &bytesSource{b: data}
	now := t0.Add(time.Hour)
	st := Status{LatestAvailableRevision: int32(src.next(8))}
	obs := Observation{}
	nodes := src.next(8) + 1
	for i := range nodes {
		n := NodeStatus{
			NodeName:        fmt.Sprintf("n%d", (i*7)%nodes),
			CurrentRevision: int32(src.next(7)),
		}
		if src.next(2) == 1 {
			n.TargetRevision = n.CurrentRevision + 1 + int32(src.next(2))
		}
		if src.next(2) == 1 {
			reason := ReasonInstallerPodFailed
			if src.next(2) == 1 {
				reason = ReasonOperandFailed
			}
			n = failed(n, int32(src.next(7)), int32(src.next(4)), reason, now.Add(-time.Duration(src.next(40))*time.Second), "e")
		}
		st.NodeStatuses = append(st.NodeStatuses, n)
		obs[n.NodeName] = NodeObservation{
			Operand: OperandState{Phase: fuzzOperandPhases[src.next(4)], Revision: int32(src.next(7)),
				ReadySince: now.Add(-time.Duration(src.next(60)) * time.Second)},
			Installer: InstallerState{Phase: fuzzInstallerPhases[src.next(5)], StartTime: now.Add(-time.Duration(src.next(120)) * time.Second),
				Containers: []ContainerTermination{{Name: "installer", Message: "m", OOMKilled: src.next(2) == 1}}},
			Unreachable: src.next(5) == 0,
		}
	}
	p := Policy{
		MaxUnavailable:          int32(src.next(4)),
		MaxInstallerRetries:     int32(src.next(3)),
		InstallerPendingTimeout: dur(time.Duration(src.next(3)) * 30 * time.Second),
		OperandReadyTimeout:     dur(time.Duration(src.next(3)) * 30 * time.Second),
		MinReadyDuration:        dur(time.Duration(src.next(3)) * 20 * time.Second),
		Paused:                  src.next(4) == 0,
	}
	return st, obs, p, now
}

// budgetUse counts nodes in transition and nodes unavailable: unreachable,
// in transition, operand not ready or running below the node's current
// revision (seen now or recorded), as a DaemonSet counts them.
func budgetUse(nodes []NodeStatus, obs Observation) (inTransition, unavailable int) {
	for _, n := range nodes {
		o := obs[n.NodeName]
		if n.InTransition() {
			inTransition++
		}
		regressed := n.RegressedRevision != 0 || (o.Operand.Phase != OperandNotFound && o.Operand.Revision > 0 && o.Operand.Revision < n.CurrentRevision)
		if o.Unreachable || n.InTransition() || !o.operandReady() || regressed {
			unavailable++
		}
	}
	return inTransition, unavailable
}

func FuzzDecide(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 2, 1, 0, 0, 0, 2, 1, 0, 0, 0, 2, 1, 0, 0, 0, 2, 1})
	f.Add([]byte{5, 4, 5, 0, 1, 0, 5, 2, 10, 2, 5, 3, 3, 4, 3, 0, 2, 5, 4, 0, 1, 4, 5, 1})
	f.Add([]byte{4, 7, 2, 4, 1, 1, 4, 2, 0, 3, 3, 30, 100, 1, 1, 2, 2, 3, 1, 0, 4, 3, 3, 1})
	f.Add([]byte{2, 3, 1, 2, 1, 0, 2, 3, 5, 2, 2, 10, 90, 0, 3, 1, 1, 1, 2, 2, 3, 0})
	// One node finishes its target and starts the next revision in the same plan.
	f.Add([]byte("201100220000000001"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, obs, p, now := fuzzInput(data)
		before := st.DeepCopy()
		plan, err := Decide(Input{Status: st, Observation: obs, Policy: p, Now: now})
		require.Equal(t, *before, st, "input not mutated")
		if err != nil {
			require.ErrorIs(t, err, converge.ErrInvalid)
			return
		}
		again, err := Decide(Input{Status: st, Observation: obs, Policy: p, Now: now})
		require.NoError(t, err)
		require.Equal(t, plan, again, "deterministic")

		out := plan.Status.NodeStatuses
		require.Len(t, out, len(st.NodeStatuses))
		for i, n := range out {
			old, ok := st.Node(n.NodeName)
			require.True(t, ok)
			require.LessOrEqual(t, n.TargetRevision, max(st.LatestAvailableRevision, old.TargetRevision, old.CurrentRevision), "never target above latest")
			if i > 0 {
				require.Less(t, out[i-1].NodeName, n.NodeName, "sorted")
			}
			require.GreaterOrEqual(t, n.CurrentRevision, old.CurrentRevision, "current never goes back")
		}
		require.NoError(t, plan.Status.Validate(), "the plan's status is valid")

		starts, readyStarts, finished := 0, 0, 0
		current := map[string]NodeStatus{} // each node as the steps so far left it
		for _, n := range st.NodeStatuses {
			current[n.NodeName] = n
		}
		for _, s := range plan.Steps {
			from := current[s.Node]
			to := from
			if s.To != nil {
				to = *s.To
			}
			current[s.Node] = to
			for _, d := range s.Delete {
				require.NotNil(t, s.To, "an installer that must go is recorded with the node's status")
				require.Equal(t, installerFor(from), d, "only the node's own attempt is deleted")
				require.NotEqual(t, installerFor(to), d, "the next attempt has a new name")
				require.Nil(t, s.Create, "no new installer while the old one is being deleted")
			}
			if from.InTransition() && !to.InTransition() {
				finished++
			}
			if s.Create != nil {
				require.NotZero(t, to.TargetRevision, "installers only for nodes in transition")
				require.Equal(t, installerFor(to), *s.Create, "creates the installer of the new status")
				require.False(t, p.Paused, "paused creates nothing")
				require.False(t, obs[s.Node].Unreachable, "no installer on an unreachable node")
			}
			if from.InTransition() || !to.InTransition() {
				continue
			}
			starts++
			if obs[s.Node].operandReady() && to.RegressedRevision == 0 {
				readyStarts++
			}
			require.False(t, p.Paused, "paused starts nothing")
			require.False(t, obs[s.Node].Unreachable, "unreachable nodes are not started")
			if from.LastFailedRevision == to.TargetRevision && from.Failing() {
				require.Equal(t, plan.Start, s.Node, "only the start node retries a revision it failed")
				require.False(t, p.retriesExhausted(from), "no retry beyond MaxInstallerRetries")
				require.False(t, now.Before(p.retryAt(from)), "no retry before the backoff")
				continue
			}
			if !obs[s.Node].operandReady() || to.RegressedRevision != 0 {
				continue // a node already down may take a failing revision: it has nothing to lose
			}
			for _, n := range st.NodeStatuses {
				if n.Failing() && !obs[n.NodeName].Unreachable {
					require.NotEqual(t, n.LastFailedRevision, to.TargetRevision, "a failing revision does not spread to a healthy node")
				}
			}
		}

		// MaxUnavailable, exactly. A reachable node enters transition only by
		// being started, and becomes unavailable only by being started while
		// its operand is ready; finishing, failing and moving to a newer
		// target never add to either count. Decide checks the budget
		// before every start against the counts left after this plan's own
		// transitions (a node may finish and start again in one plan), so:
		//   - an input within budget gives an output within budget;
		//   - an input already over budget (MaxUnavailable lowered, nodes
		//     failing) starts nothing new, unless the plan's own completions
		//     brought it back within budget first, and then the output is
		//     within budget too;
		//   - the counts change by exactly the starts and completions.
		// A bound like "<= max(before, budget)" would let a plan top an
		// over-budget input up to its old level, which must never happen.
		budget := p.maxUnavailable()
		transitionBefore, unavailableBefore := budgetUse(st.NodeStatuses, obs)
		transitionAfter, unavailableAfter := budgetUse(out, obs)
		require.Equal(t, transitionBefore-finished+starts, transitionAfter, "transitions change only by starts and completions")
		require.LessOrEqual(t, unavailableAfter, unavailableBefore+readyStarts, "only starting a ready node makes one more unavailable")
		if transitionBefore <= budget {
			require.LessOrEqual(t, transitionAfter, budget, "within budget in transition stays within budget")
		}
		if unavailableBefore <= budget {
			require.LessOrEqual(t, unavailableAfter, budget, "within budget unavailable stays within budget")
		}
		if starts > 0 {
			require.LessOrEqual(t, transitionAfter, budget, "over budget in transition: nothing new starts")
		}
		if readyStarts > 0 {
			require.LessOrEqual(t, unavailableAfter, budget, "over budget unavailable: no ready node starts")
		}
		if plan.RequeueAfter < 0 {
			t.Fatalf("negative requeue %v", plan.RequeueAfter)
		}
		require.NotEmpty(t, plan.String())
	})
}

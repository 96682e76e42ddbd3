package rollout_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

func ExampleStartNode() {
	nodes := []rollout.NodeStatus{
		{NodeName: "master-0", CurrentRevision: 3},
		{NodeName: "master-1", CurrentRevision: 3},
		{NodeName: "master-2", CurrentRevision: 2},
	}
	obs := rollout.Observation{
		"master-0": {Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 3}},
		"master-1": {Operand: rollout.OperandState{Phase: rollout.OperandPending, Revision: 3}},
		"master-2": {Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 2}},
	}
	i, why, _ := rollout.StartNode(nodes, obs)
	fmt.Println(nodes[i].NodeName, "-", why)
	// Output: master-1 - master-1 has the oldest operand that is not ready
}

func ExampleRevisionToStart() {
	first := rollout.NodeStatus{NodeName: "a", CurrentRevision: 2}
	fmt.Println(rollout.RevisionToStart(first, nil, 4))

	leader := rollout.NodeStatus{NodeName: "a", CurrentRevision: 4}
	follower := rollout.NodeStatus{NodeName: "b", CurrentRevision: 2}
	fmt.Println(rollout.RevisionToStart(follower, &leader, 4))

	busy := rollout.NodeStatus{NodeName: "a", CurrentRevision: 2, TargetRevision: 4}
	fmt.Println(rollout.RevisionToStart(follower, &busy, 4))
	// Output:
	// 4
	// 4
	// 0
}

func ExampleNextNodeStatus() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	n := rollout.NodeStatus{NodeName: "master-0", CurrentRevision: 3, TargetRevision: 4}
	obs := rollout.NodeObservation{Installer: rollout.InstallerState{
		Phase:      rollout.InstallerFailed,
		Containers: []rollout.ContainerTermination{{Name: "installer", OOMKilled: true}},
	}}
	d := rollout.NextNodeStatus(n, rollout.NodeInput{Latest: 4, Observation: obs, Now: now})
	fmt.Println(d.Reason)
	fmt.Println(d.To.LastFailedErrors, "retry as", rollout.InstallerName(*d.To), "at", d.To.RetryTime.Format(time.TimeOnly))
	// Output:
	// InstallerPodFailed 1 time, retrying in 15s
	// [installer: OOMKilled] retry as installer-4-retry-1-master-0 at 12:00:15
}

func ExampleDecide() {
	st := rollout.Status{LatestAvailableRevision: 2, NodeStatuses: []rollout.NodeStatus{
		{NodeName: "master-0", CurrentRevision: 1},
		{NodeName: "master-1", CurrentRevision: 1},
		{NodeName: "master-2", CurrentRevision: 1},
	}}
	ready := rollout.NodeObservation{Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1}}
	obs := rollout.Observation{"master-0": ready, "master-1": ready, "master-2": ready}
	d, _ := rollout.Decide(rollout.Input{Status: st, Observation: obs, Policy: rollout.Policy{MaxUnavailable: 2}, Now: time.Now()})
	fmt.Println(d)
	// Output:
	// revision 2: master-0: starting revision 2
	// start master-0 (master-0 has the oldest current revision)
	//   master-0: starting revision 2; current 1, target 2; create installer-2-master-0
	//   master-1: starting revision 2; current 1, target 2; create installer-2-master-1
}

// ExampleDecide_holds: what keeps nodes from starting is a hold, a value a
// host reads from the decision or the persisted status: here master-2 is
// unreachable, so with MaxUnavailable 1 no node that is up may go down.
func ExampleDecide_holds() {
	st := rollout.Status{LatestAvailableRevision: 2, NodeStatuses: []rollout.NodeStatus{
		{NodeName: "master-0", CurrentRevision: 1},
		{NodeName: "master-1", CurrentRevision: 1},
		{NodeName: "master-2", CurrentRevision: 1},
	}}
	ready := rollout.NodeObservation{Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1}}
	away := rollout.NodeObservation{Unreachable: true, Operand: ready.Operand}
	obs := rollout.Observation{"master-0": ready, "master-1": ready, "master-2": away}
	d, _ := rollout.Decide(rollout.Input{Status: st, Observation: obs, Now: time.Now()})
	for _, h := range d.Status.Holds {
		fmt.Printf("%s %s: %s\n", h.Reason, h.Object, h.Message)
	}
	// Output:
	// NodeUnavailable master-2: master-2 is unavailable (unreachable) and maxUnavailable 1 is reached: raise maxUnavailable, or drop a node that is gone for good from the node list
}

// ExamplePolicy_installerBackoff: a zero InstallerBackoff is library-go's
// installer backoff, and the retry time Decide records follows it.
func ExamplePolicy_installerBackoff() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	n := rollout.NodeStatus{NodeName: "master-0", CurrentRevision: 1, TargetRevision: 2}
	failed := rollout.NodeObservation{Installer: rollout.InstallerState{Phase: rollout.InstallerFailed}}
	for range 4 {
		d := rollout.NextNodeStatus(n, rollout.NodeInput{Latest: 2, Observation: failed, Now: now})
		n = *d.To
		fmt.Println(n.LastFailedCount, n.RetryTime.Sub(now))
	}
	// Output:
	// 1 15s
	// 2 23s
	// 3 34s
	// 4 51s
}

func ExampleController_Sync() {
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	nodes := []string{"master-0", "master-1", "master-2"}
	cluster := fake.NewRolloutCluster(clk, 1, nodes...)
	cluster.ScriptInstallers("master-1", fake.InstallerScript{Outcome: fake.InstallerFails, Message: "etcd unreachable"})
	store := fake.NewRolloutStatusStore(2, 1, nodes...)
	c, err := rollout.NewController(rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}

	for !store.Current().Converged() {
		res, err := c.Sync(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range res.Events {
			fmt.Println(e.Type, e.Reason+":", e.Message)
		}
		if !cluster.Tick() {
			clk.Step(res.RequeueAfter)
		}
	}
	// Output:
	// Normal NodeTargetRevisionChanged: Updating node "master-0" from revision 1 to 2 because starting revision 2
	// Normal NodeCurrentRevisionChanged: Updated node "master-0" from revision 1 to 2 because static pod is ready
	// Normal NodeTargetRevisionChanged: Updating node "master-1" from revision 1 to 2 because starting revision 2
	// Warning InstallerPodFailed: Installer installer-2-master-1 for revision 2 on node "master-1" failed: installer: etcd unreachable
	// Normal NodeCurrentRevisionChanged: Updated node "master-1" from revision 1 to 2 because static pod is ready
	// Normal NodeTargetRevisionChanged: Updating node "master-2" from revision 1 to 2 because starting revision 2
	// Normal NodeCurrentRevisionChanged: Updated node "master-2" from revision 1 to 2 because static pod is ready
}

// ExampleDecide_crashAfterOrder: a sync writes the order of an installer
// (InstallerNotSeen) before it creates it; when the process dies in
// between, the next sync finds no installer and creates the same one
// again: an installer ordered and never seen is no failed attempt. While
// it has not started, the node is held (InstallerPending).
func ExampleDecide_crashAfterOrder() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := rollout.Status{LatestAvailableRevision: 2, NodeStatuses: []rollout.NodeStatus{{NodeName: "master-0", CurrentRevision: 1}}}
	ready := rollout.NodeObservation{Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1}}
	first, _ := rollout.Decide(rollout.Input{Status: st, Observation: rollout.Observation{"master-0": ready}, Now: now})
	n := first.Status.NodeStatuses[0]
	fmt.Println("ordered", rollout.InstallerName(n), "not seen:", n.InstallerNotSeen)

	// The process dies before the create: the next sync reads the order
	// back and finds no installer.
	next, _ := rollout.Decide(rollout.Input{Status: first.Status, Observation: rollout.Observation{"master-0": ready}, Now: now.Add(time.Minute)})
	n = next.Status.NodeStatuses[0]
	fmt.Println(next.Steps[0].Reason)
	fmt.Println("create", next.Steps[0].Create.Name, "failed attempts:", n.LastFailedCount)
	for _, h := range next.Status.Holds {
		fmt.Printf("%s %s: %s\n", h.Reason, h.Object, h.Message)
	}
	// Output:
	// ordered installer-2-master-0 not seen: true
	// installer installer-2-master-0 ordered and not seen yet, ensuring it
	// create installer-2-master-0 failed attempts: 0
	// InstallerPending master-0: master-0: installer installer-2-master-0, ordered at 2026-01-01T12:00:00Z, has not started
}

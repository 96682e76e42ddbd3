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
	d := rollout.NextNodeStatus(n, 4, obs, rollout.Policy{}, now)
	fmt.Println(d.Reason)
	fmt.Println(d.Status.LastFailedErrors, "retry as", rollout.InstallerName(d.Status))
	// Output:
	// installer failed 1 time, retrying in 10s
	// [installer: OOMKilled] retry as installer-4-retry-1-master-0
}

func ExamplePlanRollout() {
	st := rollout.Status{LatestAvailableRevision: 2, NodeStatuses: []rollout.NodeStatus{
		{NodeName: "master-0", CurrentRevision: 1},
		{NodeName: "master-1", CurrentRevision: 1},
		{NodeName: "master-2", CurrentRevision: 1},
	}}
	ready := rollout.NodeObservation{Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1}}
	obs := rollout.Observation{"master-0": ready, "master-1": ready, "master-2": ready}
	plan, _ := rollout.PlanRollout(st, obs, rollout.Policy{MaxUnavailable: 2}, time.Now())
	fmt.Println(plan)
	// Output:
	// revision 2: master-0: starting revision 2
	// start master-0 (master-0 has the oldest current revision)
	//   master-0: starting revision 2; target 0->2; create installer-2-master-0
	//   master-1: starting revision 2; target 0->2; create installer-2-master-1
	// blocked: maxUnavailable 2 reached: 2 in transition, 2 unavailable; master-2 waits for revision 2
}

func ExampleBackoff_Delay() {
	var b rollout.Backoff // the defaults: 10s · 1.5^(n-1), capped at 10m
	for _, failures := range []int32{1, 2, 3, 12} {
		fmt.Println(failures, b.Delay(failures))
	}
	// Output:
	// 1 10s
	// 2 15s
	// 3 22.5s
	// 12 10m0s
}

func ExampleController_Sync() {
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	nodes := []string{"master-0", "master-1", "master-2"}
	cluster := fake.NewRolloutCluster(clk, 1, nodes...)
	cluster.ScriptInstallers("master-1", fake.InstallerScript{Outcome: fake.InstallerFails, Message: "etcd unreachable"})
	store := fake.NewRolloutStatusStore(2, 1, nodes...)
	c := &rollout.Controller{Status: store, Installers: cluster, Operands: cluster, Clock: clk}

	for {
		res, err := c.Sync(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		if res.Plan.Status.NodeStatuses[1].LastFailedCount > 0 && res.RequeueAfter > 0 {
			fmt.Println("backing off:", res.Plan.Reason)
		}
		if res.Converged {
			fmt.Println(res.Plan.Reason)
			break
		}
		if !cluster.Tick() {
			clk.Step(res.RequeueAfter)
		}
	}
	for _, i := range cluster.CreatedInstallers() {
		fmt.Println(i.Name)
	}
	// Output:
	// backing off: master-1: installer failed 1 time, retrying in 10s
	// 3 nodes are at revision 2
	// installer-2-master-0
	// installer-2-master-1
	// installer-2-retry-1-master-1
	// installer-2-master-2
}

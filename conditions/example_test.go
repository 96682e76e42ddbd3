package conditions_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func print(conds []metav1.Condition) {
	for _, c := range conds {
		fmt.Printf("%s=%s %s %q (since %s)\n", c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.UTC().Format(time.TimeOnly))
	}
}

// Set takes the time from the caller and moves LastTransitionTime only when
// the status changes.
func ExampleSet() {
	var conds []metav1.Condition
	_, _ = conditions.Set(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Installing"}, t0, conditions.WithObservedGeneration(1))
	changed, _ := conditions.Set(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Checking", Message: "waiting for 3 replicas"}, t0.Add(time.Minute))
	fmt.Println("changed:", changed)
	_, _ = conditions.Set(&conds, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable"}, t0.Add(2*time.Minute))
	print(conds)

	_, err := conditions.Set(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse}, t0)
	fmt.Println(err)
	// Output:
	// changed: true
	// Available=True MinimumReplicasAvailable "" (since 12:02:00)
	// Ready=False Checking "waiting for 3 replicas" (since 12:00:00)
	// conditions: condition "Ready": invalid reason: must not be empty when the status is False
}

// Union collapses sub-conditions into one; a bad sub-condition counts only
// after its grace period.
func ExampleUnion() {
	subs := []metav1.Condition{
		{Type: "NodeInstallerDegraded", Status: metav1.ConditionTrue, Reason: "InstallerPodFailed", Message: "installer on node-1 failed", LastTransitionTime: metav1.NewTime(t0)},
		{Type: "StaticPodsDegraded", Status: metav1.ConditionTrue, Reason: "Crashing", Message: "etcd-node-2 is crashlooping", LastTransitionTime: metav1.NewTime(t0.Add(4 * time.Minute))},
		{Type: "GuardDegraded", Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: metav1.NewTime(t0)},
	}
	opts := conditions.UnionOptions{Type: "Degraded", Inertia: conditions.InertiaByType(2*time.Minute, nil)}
	for _, now := range []time.Time{t0.Add(time.Minute), t0.Add(3 * time.Minute), t0.Add(6 * time.Minute)} {
		c, _ := conditions.Union(subs, opts, now)
		fmt.Printf("%s: Degraded=%s %s\n%s\n", now.Format(time.TimeOnly), c.Status, c.Reason, c.Message)
	}
	// Output:
	// 12:01:00: Degraded=False AsExpected
	// NodeInstallerDegraded: installer on node-1 failed
	// StaticPodsDegraded: etcd-node-2 is crashlooping
	// 12:03:00: Degraded=True NodeInstaller_InstallerPodFailed
	// NodeInstallerDegraded: installer on node-1 failed
	// 12:06:00: Degraded=True NodeInstaller_InstallerPodFailed::StaticPods_Crashing
	// NodeInstallerDegraded: installer on node-1 failed
	// StaticPodsDegraded: etcd-node-2 is crashlooping
}

// Summary computes Ready from conditions of either polarity; a type nobody
// reported counts as Unknown.
func ExampleSummary() {
	conds := []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "Up"},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "Crashing", Message: "1 of 3 pods crashlooping"},
	}
	ready, _ := conditions.Summary(conds, conditions.SummaryOptions{ForTypes: []string{"Available", "Degraded", "BackupsHealthy"}})
	fmt.Printf("Ready=%s %s\n%s\n", ready.Status, ready.Reason, ready.Message)
	// Output:
	// Ready=False Crashing
	// * Degraded: 1 of 3 pods crashlooping
	// * BackupsHealthy: Condition not yet reported
}

// The kstatus helpers keep Ready, Reconciling and Stalled consistent.
func ExampleSetReconciling() {
	var conds []metav1.Condition
	_, _ = conditions.SetReconciling(&conds, "Upgrading", "upgrading to v2", t0)
	print(conds)
	_, _ = conditions.SetReady(&conds, "Installed", "v2 is running", t0.Add(time.Minute))
	print(conds)
	// Output:
	// Ready=Unknown Upgrading "upgrading to v2" (since 12:00:00)
	// Reconciling=True Upgrading "upgrading to v2" (since 12:00:00)
	// Ready=True Installed "v2 is running" (since 12:01:00)
}

// A host declares the polarity of its own condition types.
func ExamplePolarities_Of() {
	pols := conditions.Polarities{"Throttled": conditions.Negative}
	for _, t := range []string{"Ready", "Degraded", "NodeInstallerDegraded", "Throttled", "APIThrottled", "BackupsHealthy"} {
		fmt.Println(t, pols.Of(t))
	}
	// Output:
	// Ready Positive
	// Degraded Negative
	// NodeInstallerDegraded Negative
	// Throttled Negative
	// APIThrottled Negative
	// BackupsHealthy Positive
}

// JoinBounded keeps a message built from many items within a limit (the
// API's 32,768 bytes by default) and says how many it left out.
func ExampleJoinBounded() {
	nodes := []string{"node-a", "node-b", "node-c", "node-d", "node-e"}
	fmt.Println("unreachable: " + conditions.JoinBounded(nodes, ", ", 30))
	fmt.Println(conditions.SanitizeReason("image pull failed"))
	// Output:
	// unreachable: node-a, node-b, … and 3 more
	// ImagePullFailed
}

package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// midRollout is a rollout of n nodes to revision 3: a third of the nodes at
// 3, one node installing, the rest at 2, every operand ready.
func midRollout(n int) (rollout.Status, rollout.Observation) {
	st := rollout.Status{LatestAvailableRevision: 3}
	obs := rollout.Observation{}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		ns := rollout.NodeStatus{NodeName: name, CurrentRevision: 2}
		switch {
		case i < n/3:
			ns.CurrentRevision = 3
		case i == n/3:
			ns.TargetRevision = 3
		}
		st.NodeStatuses = append(st.NodeStatuses, ns)
		obs[name] = rollout.NodeObservation{
			Operand:   rollout.OperandState{Phase: rollout.OperandReady, Revision: ns.CurrentRevision, ReadySince: t0},
			Installer: rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0},
		}
	}
	return st, obs
}

func BenchmarkPlanRollout(b *testing.B) {
	for _, n := range []int{3, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			st, obs := midRollout(n)
			now := t0.Add(time.Minute)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rollout.PlanRollout(st, obs, rollout.Policy{}, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSimulation rolls n nodes from revision 1 to 2 through the
// Controller and the fakes, and reports per node advanced: the host API calls
// (reads included: every sync reads each node once, which an informer-backed
// host serves from its cache), the mutations (status writes, installer
// creates and deletes), the status writes and the syncs.
func BenchmarkSimulation(b *testing.B) {
	for _, n := range []int{3, 10, 50} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var calls, mutations, writes, syncs int
			ctx := klog.NewContext(context.Background(), klog.Logger{})
			b.ReportAllocs()
			for b.Loop() {
				names := make([]string, n)
				for i := range names {
					names[i] = fmt.Sprintf("node-%03d", i)
				}
				clk := clocktesting.NewFakeClock(t0)
				cluster := fake.NewRolloutCluster(clk, 1, names...)
				store := fake.NewRolloutStatusStore(2, 1, names...)
				c := &rollout.Controller{Status: store, Installers: cluster, Operands: cluster, Clock: clk}
				for done := false; !done; {
					res, err := c.Sync(ctx)
					if err != nil {
						b.Fatal(err)
					}
					syncs++
					done = res.Converged
					cluster.Tick()
					clk.Step(time.Second)
				}
				recorded := cluster.Recorded()
				calls += len(recorded) + store.Reads + store.WriteCount()
				writes += store.WriteCount()
				mutations += store.WriteCount()
				for _, call := range recorded {
					if call.Method == fake.RolloutEnsureInstaller || call.Method == fake.RolloutDeleteInstaller {
						mutations++
					}
				}
			}
			advanced := float64(b.N * n)
			b.ReportMetric(float64(calls)/advanced, "apicalls/node")
			b.ReportMetric(float64(mutations)/advanced, "mutations/node")
			b.ReportMetric(float64(writes)/advanced, "writes/node")
			b.ReportMetric(float64(syncs)/advanced, "syncs/node")
		})
	}
}

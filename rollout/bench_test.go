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

// benchNodes are the node counts the benchmarks show the slope on.
var benchNodes = []int{3, 100, 1000, 5000, 20000}

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
			ns.InstallerOrderedTime = &metaT0
		}
		st.NodeStatuses = append(st.NodeStatuses, ns)
		obs[name] = rollout.NodeObservation{
			Operand:   rollout.OperandState{Phase: rollout.OperandReady, Revision: ns.CurrentRevision, ReadySince: t0},
			Installer: rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0},
		}
	}
	return st, obs
}

// BenchmarkDecide decides one sync of a rollout in progress; its
// allocations do not grow with the node count. cpu-ns/op is the process's
// CPU time per op (run with GOMAXPROCS=1 so that it counts one core), which
// a machine shared with other builds inflates less than the wall time.
func BenchmarkDecide(b *testing.B) {
	for _, n := range benchNodes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			st, obs := midRollout(n)
			in := rollout.Input{Status: st, Observation: obs, Now: t0.Add(time.Minute)}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if _, err := rollout.Decide(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkControllerSyncNothingChanged syncs a rollout in progress where
// nothing changed since the last sync (an installer still running) through
// fake.RolloutCluster, and reports the host reads and writes per sync.
func BenchmarkControllerSyncNothingChanged(b *testing.B) {
	for _, n := range benchNodes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			ctx := klog.NewContext(context.Background(), klog.Logger{})
			st, _ := midRollout(n)
			clk := clocktesting.NewFakeClock(t0.Add(time.Minute))
			names := make([]string, n)
			for i, ns := range st.NodeStatuses {
				names[i] = ns.NodeName
			}
			cluster := fake.NewRolloutCluster(clk, 0, names...)
			for _, ns := range st.NodeStatuses {
				cluster.Operands[ns.NodeName] = rollout.OperandState{Phase: rollout.OperandReady, Revision: ns.CurrentRevision, ReadySince: t0}
				if ns.InTransition() {
					inst := rollout.Installer{Name: rollout.InstallerName(ns), Node: ns.NodeName, Revision: ns.TargetRevision}
					cluster.Pods[inst.Name] = &fake.RolloutPod{Installer: inst, State: rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0}}
				}
			}
			store := &fake.RolloutStatusStore{Status: st}
			c, err := rollout.NewController(rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Sync(ctx); err != nil { // writes the conditions once
				b.Fatal(err)
			}
			writesBefore := store.WriteCount()
			reads, syncs := 0, 0
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				cluster.ResetCalls()
				if _, err := c.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				reads += len(cluster.Recorded()) + 1
				syncs++
			}
			if w := store.WriteCount() - writesBefore; w != 0 {
				b.Fatalf("a sync where nothing changed wrote %d times", w)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(reads)/float64(syncs), "reads/sync")
			b.ReportMetric(0, "writes/sync")
		})
	}
}

// BenchmarkRollout rolls n nodes from revision 1 to 2 through the
// Controller and the fakes, and reports per node advanced: the host API calls
// (reads included: every sync reads each node once, which an informer-backed
// host serves from its cache), the mutations (status writes, installer
// creates and deletes), the status writes and the syncs.
func BenchmarkRollout(b *testing.B) {
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
				c, err := rollout.NewController(rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk})
				if err != nil {
					b.Fatal(err)
				}
				for !store.Current().Converged() {
					if _, err := c.Sync(ctx); err != nil {
						b.Fatal(err)
					}
					syncs++
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

// Command staticpod-rollout rolls a per-node component (a static pod) out
// revision by revision, a few nodes at a time, with the rollout engine.
//
// It is the wiring a host writes: informers cache pods and nodes,
// kube.RolloutPods creates installer pods and reads the mirror pods
// <operand>-<node>, kube.ConfigMapStatusStore keeps the status, an
// etcd-style quorum gate admits a node's start only while the others keep a
// quorum, and a loop calls Controller.Sync, records its events with
// kube.RecordLegacyEvents and honours Result.RequeueAfter. The rest of the cluster is
// examples/internal/e2e/staticpodrollout: in memory (no flags), a simulated kubelet
// runs the installers on a fake clock, one failing once, while revisions 2
// and 3 are published; -kubeconfig rolls -revision out on a real cluster,
// and -simulate-kubelet plays the simulation on an apiserver without kubelet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/examples/internal/e2e/staticpodrollout"
	"github.com/converge-dev/converge/internal/cli"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

func main() { cli.Main(run) }

// run parses the flags, connects and rolls out; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c staticpodrollout.Config
	var verbose bool
	fs := flag.NewFlagSet("staticpod-rollout", flag.ContinueOnError)
	fs.IntVar(&c.Nodes, "nodes", 3, "number of nodes of the simulated cluster")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig instead of in memory")
	fs.BoolVar(&c.Simulate, "simulate-kubelet", false, "with -kubeconfig: create -nodes nodes and play the simulated cluster on that apiserver")
	fs.StringVar(&c.Namespace, "namespace", "converge-rollout", "namespace of the installer and operand pods")
	fs.StringVar(&c.Operand, "operand", "operand", "operand name: its mirror pods are <operand>-<node>")
	fs.StringVar(&c.Image, "installer-image", "busybox:1.36", "installer pod image (-kubeconfig only)")
	fs.StringVar(&c.NodeSelector, "node-selector", "node-role.kubernetes.io/control-plane", "label selector of the nodes to roll out to")
	fs.IntVar(&c.Revision, "revision", 1, "revision to roll out to (-kubeconfig only; simulated it is 1 -> 2 -> 3)")
	fs.IntVar(&c.MaxUnavailable, "max-unavailable", 0, "how many nodes may be in transition or not ready at once (0: one in 100 nodes, at least 1)")
	fs.IntVar(&c.MaxSyncs, "max-syncs", 0, "give up after this many syncs per revision (0: 50 per wave of -max-unavailable nodes, plus 100)")
	fs.DurationVar(&c.Timeout, "timeout", 0, "give up after this long (0: 10m plus 1s per node)")
	fs.BoolVar(&c.Plan, "plan", false, "print the decision of every sync: the steps, the installers to create and delete, the holds")
	fs.BoolVar(&verbose, "v", false, "log what the engine does")
	err := cli.Parse(fs, args, stderr)
	if err == nil {
		err = cli.Requires(fs, "kubeconfig", "simulate-kubelet", "installer-image", "revision")
	}
	if err == nil {
		err = c.Validate()
	}
	var client kubernetes.Interface
	if err == nil {
		client, err = connect(c)
	}
	if err == nil {
		if !verbose {
			ctx = klog.NewContext(ctx, klog.Logger{}) // discards
		}
		err = rollOut(ctx, c.Scaled(), client, stdout, nil)
	}
	return cli.Exit(stderr, fs.Name(), err)
}

// connect returns the fake clientset, or a client of -kubeconfig.
func connect(c staticpodrollout.Config) (kubernetes.Interface, error) {
	if c.Kubeconfig == "" {
		return staticpodrollout.NewMemoryClient(), nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = c.RateLimit()
	return kubernetes.NewForConfig(rc)
}

// rollOut runs the engine until every node runs each revision the cluster
// publishes; hooks (nil here) let tests wrap the engine's host interfaces.
func rollOut(ctx context.Context, c staticpodrollout.Config, client kubernetes.Interface, out io.Writer,
	hooks *staticpodrollout.Hooks) (err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.Timeout, fmt.Errorf("-timeout %v passed: %w", c.Timeout, context.DeadlineExceeded))
	defer cancel()
	defer func() {
		if err != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			err = context.Cause(ctx) // -timeout passed
		}
	}()
	store, err := kube.NewConfigMapStatusStore[rollout.Status](client.CoreV1(), c.Namespace, c.Operand+"-rollout-status", "")
	if err != nil {
		return err
	}
	cluster, err := staticpodrollout.Start(ctx, client, store, c, out, hooks)
	if err != nil {
		return err
	}
	defer cluster.Stop()

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.Namespace))
	pods := factory.Core().V1().Pods().Lister()
	adapter, err := kube.NewRolloutPods(kube.RolloutPodsConfig{Client: client, Pods: pods, Nodes: factory.Core().V1().Nodes().Lister(),
		Namespace: c.Namespace, Operand: c.Operand, NodeSelector: c.Selector(), InstallerPod: cluster.InstallerPod})
	if err != nil {
		return err
	}
	rc := rollout.Config{Status: store, Installers: adapter, Operands: adapter, Nodes: adapter, Gate: quorumGate(adapter),
		Clock: cluster.Clock(), Policy: rollout.Policy{MaxUnavailable: int32(c.MaxUnavailable)}}
	if c.Plan {
		rc.OnDecision = cluster.PrintDecision
	}
	hooks.WrapConfig(&rc)
	ctrl, err := rollout.NewController(rc)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // stops the informers, which Shutdown waits for
	factory.WaitForCacheSync(ctx.Done())

	// The correlator's defaults would drop or merge most events of a large rollout: all are about one object.
	burst := max(25, 20*c.Nodes)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(
		record.CorrelatorOptions{BurstSize: burst, MaxEvents: burst, LRUCacheSize: max(4096, burst)}))
	broadcaster.StartRecordingToSink(cluster.EventSink())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "staticpod-rollout"})
	status := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.Operand + "-rollout-status", Namespace: c.Namespace}}

	for _, rev := range cluster.Revisions() {
		if err := cluster.Publish(ctx, rev); err != nil {
			return err
		}
		for syncs := 0; ; syncs++ {
			if syncs == c.MaxSyncs {
				return fmt.Errorf("revision %d did not converge within %d syncs (-max-syncs)", rev, c.MaxSyncs)
			}
			res, err := ctrl.Sync(ctx)
			kube.RecordLegacyEvents(recorder, status, res.Events)
			if err != nil {
				return err
			}
			done, err := cluster.Report(ctx, rev, res)
			if err != nil {
				return err
			}
			if done {
				break
			}
			if err := cluster.Wait(ctx, res.RequeueAfter, pods); err != nil {
				return err
			}
		}
	}
	return cluster.Finish(ctx)
}

// quorumGate admits taking a member down only while a majority of the
// members stays ready without it and without those the rollout already
// counts down, as an etcd operator asks before it restarts a member. A
// member that is not ready (never installed, failed, unreachable) casts no
// vote, so installing on it costs the quorum nothing and is admitted: the
// first install of a cluster starts. A denial holds the node (Progressing
// says why); the rollout starts it once the quorum allows. One or two
// members keep no quorum through any restart: there is none to protect.
func quorumGate(members interface {
	rollout.NodeLister
	rollout.OperandBatchReader
}) rollout.GateFunc {
	return func(ctx context.Context, d rollout.Disruption) error {
		nodes, err := members.ListNodes(ctx)
		if err != nil {
			return err
		}
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		operands := make([]rollout.OperandState, len(nodes))
		if err := members.GetOperands(ctx, names, operands); err != nil {
			return err
		}
		ready, member := 0, false
		for i, n := range nodes {
			if n.Unreachable || operands[i].Phase != rollout.OperandReady || slices.Contains(d.Down, n.Name) {
				continue
			}
			if n.Name == d.Installer.Node {
				member = true // a ready member: restarting it costs a vote
				continue
			}
			ready++
		}
		if quorum := len(nodes)/2 + 1; member && quorum < len(nodes) && ready < quorum {
			return fmt.Errorf("etcd quorum needs %d of %d members ready, %d would be without %s", quorum, len(nodes), ready, d.Installer.Node)
		}
		return nil
	}
}

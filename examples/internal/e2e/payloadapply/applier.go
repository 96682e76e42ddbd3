package payloadapply

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
	"github.com/converge-dev/converge/testenv/standin"
)

// Applier is kube.Applier as the example runs it: it tells the run level of the
// manifest applied last (for the progress line), reports every failed attempt and every
// readiness check that must wait, and, with Simulate, plays the job and deployment
// controllers of a cluster that has none (the in-memory one, an apiserver without
// kube-controller-manager): a Job or a Deployment that kube.Applier finds not ready yet
// gets the status its controller writes once done (standin.Done) through its
// status subresource, so the next check finds it ready. kube.Applier judges every other
// kind too; those of the payload (namespaces, service accounts, config maps, secrets,
// ClusterIP services) are ready once they exist, so none of them is simulated.
type Applier struct {
	// Kube applies, deletes and checks readiness.
	Kube *kube.Applier
	// Cluster reaches the objects to make ready; FieldManager names their status writer.
	Cluster      *Cluster
	FieldManager string
	Simulate     bool
	// OnError and OnWait, when set, are told about failed attempts and waits.
	OnError, OnWait func(m *manifest.Manifest, err error)
	level           atomic.Int64
}

// NewApplier is the example's Applier on ka and c, writing as fieldManager, that
// reports failed attempts and waits to progress. An in-memory cluster simulates its
// controllers whatever simulate says.
func NewApplier(ka *kube.Applier, c *Cluster, fieldManager string, simulate bool, progress *Progress) *Applier {
	return &Applier{Kube: ka, Cluster: c, FieldManager: fieldManager, Simulate: simulate || c.Fake != nil,
		OnError: func(m *manifest.Manifest, err error) { progress.Println("attempt failed: %s: %v", m.Ref(), err) },
		OnWait: func(m *manifest.Manifest, err error) {
			progress.Println("waiting for %s to be ready: %v", m.Ref(), err)
		},
	}
}

var (
	_ payload.Applier   = (*Applier)(nil)
	_ payload.Deleter   = (*Applier)(nil)
	_ payload.Readiness = (*Applier)(nil)
)

// Level is the run level of the manifest applied last.
func (a *Applier) Level() int64 { return a.level.Load() }

// Apply applies m and reports a failed attempt to OnError.
func (a *Applier) Apply(ctx context.Context, m *manifest.Manifest, s payload.State) error {
	if level, _, ok := manifest.ParseRunLevel(m.File); ok {
		a.level.Store(int64(level))
	}
	err := a.Kube.Apply(ctx, m, s)
	if err != nil && a.OnError != nil {
		a.OnError(m, err)
	}
	return err
}

// Delete deletes the object of m.
func (a *Applier) Delete(ctx context.Context, m *manifest.Manifest) error {
	return a.Kube.Delete(ctx, m)
}

// Ready checks m with kube.Applier and reports a wait to OnWait. With Simulate, a Job
// or a Deployment that must be waited for is made ready by its simulated controller, so
// the next check finds it ready. A failed Job stays failed.
func (a *Applier) Ready(ctx context.Context, m *manifest.Manifest) error {
	err := a.Kube.Ready(ctx, m)
	if !errors.Is(err, kube.ErrNotReady) {
		return err
	}
	if a.OnWait != nil {
		a.OnWait(m, err)
	}
	if !a.Simulate || !simulated[m.GVK.GroupKind()] {
		return err
	}
	client, resErr := a.Cluster.ResourceFor(m)
	if resErr != nil {
		return resErr
	}
	obj, getErr := client.Get(ctx, m.Name(), metav1.GetOptions{})
	if getErr != nil {
		return getErr
	}
	if _, updateErr := client.UpdateStatus(ctx, doneAt(obj, a.Cluster.Clock.Now()), metav1.UpdateOptions{FieldManager: a.FieldManager}); updateErr != nil {
		return updateErr
	}
	return err
}

// simulated are the kinds whose controller the applier plays (standin.Done).
var simulated = map[schema.GroupKind]bool{{Group: "batch", Kind: "Job"}: true, {Group: "apps", Kind: "Deployment"}: true}

// doneAt is obj with the status its controller writes once done at now.
func doneAt(obj *unstructured.Unstructured, now time.Time) *unstructured.Unstructured {
	done, _ := standin.Done(obj, now)
	return done
}

package addonlifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// checkInstalled checks every add-on's ServiceAccount, Service,
// ClusterRoleBinding and Deployment: the Deployment at version and its
// image, owned by its Addon and reading the password from the Secret.
func checkInstalled(ctx context.Context, c *Cluster, ns string, names []string, version string) error {
	addons := c.Dynamic.Resource(AddonResource).Namespace(ns)
	for _, name := range names {
		a, err := addons.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		if _, err := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		crb, err := c.Kube.RbacV1().ClusterRoleBindings().Get(ctx, addonRef{ns, name}.crbName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(crb.Subjects) != 1 || crb.Subjects[0].Name != name {
			return fmt.Errorf("cluster role binding of %s binds %v", name, crb.Subjects)
		}
		dep, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ctrs := dep.Spec.Template.Spec.Containers
		switch {
		case dep.Labels[versionLabel] != version || dep.Spec.Template.Labels[versionLabel] != version:
			return fmt.Errorf("deployment %s labelled %q, its pods %q, want %s", name, dep.Labels[versionLabel], dep.Spec.Template.Labels[versionLabel], version)
		case len(ctrs) != 1 || ctrs[0].Image != images[version]:
			return fmt.Errorf("deployment %s: containers %v, want one of image %s", name, ctrs, images[version])
		case len(ctrs[0].Env) != 1 || ctrs[0].Env[0].ValueFrom == nil || ctrs[0].Env[0].ValueFrom.SecretKeyRef == nil ||
			ctrs[0].Env[0].ValueFrom.SecretKeyRef.Name != dbSecretName:
			return fmt.Errorf("deployment %s does not read the password from Secret %s: %v", name, dbSecretName, ctrs[0].Env)
		case len(dep.OwnerReferences) != 1 || dep.OwnerReferences[0].UID != a.GetUID():
			return fmt.Errorf("deployment %s owned by %v, want its Addon %s", name, dep.OwnerReferences, a.GetUID())
		}
	}
	return nil
}

// eventsRecorded checks that each named Addon has Events with every reason.
func eventsRecorded(ctx context.Context, client kubernetes.Interface, ns string, names []string, reasons ...string) error {
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	seen := map[string]map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != addonKind || e.Source.Component != managedBy {
			continue
		}
		if seen[e.InvolvedObject.Name] == nil {
			seen[e.InvolvedObject.Name] = map[string]bool{}
		}
		seen[e.InvolvedObject.Name][e.Reason] = true
	}
	for _, n := range names {
		for _, r := range reasons {
			if !seen[n][r] {
				return fmt.Errorf("no %s event on %s (of %d events)", r, n, len(events.Items))
			}
		}
	}
	return nil
}

// lifecycle is the phases every Addon of the fleet goes through, repeats
// dropped, "gone" once it is deleted.
var lifecycle = []string{"Initializing", "Checking", "Running", "Upgrading", "Checking", "Running", "Deleting", "Deleted", "gone"}

// phaseWatch records, from a watch on the Addons, every phase each one was
// written with, and "gone" when it is deleted.
type phaseWatch struct {
	w       watch.Interface
	done    chan struct{}
	mu      sync.Mutex
	history map[string][]string
	err     error
	stopped bool // events after Stop (the closed stream's error) are not the apiserver's
}

func watchPhases(ctx context.Context, addons dynamic.ResourceInterface) (*phaseWatch, error) {
	w, err := addons.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	p := &phaseWatch{w: w, done: make(chan struct{}), history: map[string][]string{}}
	go func() {
		defer close(p.done)
		for ev := range w.ResultChan() {
			p.record(ev)
		}
	}()
	return p, nil
}

func (p *phaseWatch) record(ev watch.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	obj, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		p.err = fmt.Errorf("watch event %s of %T: %v", ev.Type, ev.Object, ev.Object)
		return
	}
	if ev.Type == watch.Deleted {
		p.history[obj.GetName()] = append(p.history[obj.GetName()], "gone")
		return
	}
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "" {
		p.history[obj.GetName()] = append(p.history[obj.GetName()], phase)
	}
}

// check waits until each named Addon went through lifecycle, and reports
// the first that went another way.
func (p *phaseWatch) check(ctx context.Context, names []string) error {
	return poll(ctx, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.err != nil {
			return p.err
		}
		for _, name := range names {
			if h := slices.Compact(slices.Clone(p.history[name])); !slices.Equal(h, lifecycle) {
				return fmt.Errorf("%s went %v, want %v", name, h, lifecycle)
			}
		}
		return nil
	})
}

// stop ends the watch and waits for its goroutine.
func (p *phaseWatch) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.w.Stop()
	<-p.done
}

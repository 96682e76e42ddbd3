package crconverge

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
)

// testScheme knows the built-in kinds and testapi's.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, testapi.AddToScheme(scheme))
	return scheme
}

// newTestClient returns controller-runtime's fake client (which enforces
// resource versions) holding objs, with testapi's statuses as subresources
// and a REST mapper that knows testapi's kinds (Rollout cluster-scoped) and
// the built-in kinds the controllers touch.
func newTestClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	for kind, scope := range map[schema.GroupVersionKind]meta.RESTScope{
		testapi.GroupVersion.WithKind("Rollout"):             meta.RESTScopeRoot,
		testapi.GroupVersion.WithKind("TenantRollout"):       meta.RESTScopeNamespace,
		testapi.GroupVersion.WithKind("Addon"):               meta.RESTScopeNamespace,
		testapi.GroupVersion.WithKind("Payload"):             meta.RESTScopeNamespace,
		corev1.SchemeGroupVersion.WithKind("Node"):           meta.RESTScopeRoot,
		corev1.SchemeGroupVersion.WithKind("Pod"):            meta.RESTScopeNamespace,
		corev1.SchemeGroupVersion.WithKind("ConfigMap"):      meta.RESTScopeNamespace,
		corev1.SchemeGroupVersion.WithKind("Namespace"):      meta.RESTScopeRoot,
		corev1.SchemeGroupVersion.WithKind("Secret"):         meta.RESTScopeNamespace,
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"): meta.RESTScopeNamespace,
	} {
		mapper.Add(kind, scope)
	}
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithRESTMapper(mapper).
		WithStatusSubresource(&testapi.Rollout{}, &testapi.TenantRollout{}, &testapi.Addon{}, &testapi.Payload{}).WithObjects(objs...).Build()
}

// testManager returns crtest's manager on c, recording events in a new
// eventLog, with its client reads served by cache instead of c when cache
// is not nil (a cache that lags behind c, the API server).
func testManager(t *testing.T, c client.WithWatch, cache client.Client) (manager.Manager, *eventLog) {
	t.Helper()
	events := &eventLog{}
	mgr, err := crtest.NewManager(c, events)
	require.NoError(t, err)
	if cache != nil {
		mgr = cachedManager{Manager: mgr, cache: cache}
	}
	return mgr, events
}

// cachedManager serves its client from cache, its API reader from the
// manager's client.
type cachedManager struct {
	manager.Manager
	cache client.Client
}

func (m cachedManager) GetClient() client.Client    { return m.cache }
func (m cachedManager) GetAPIReader() client.Reader { return m.Manager.GetClient() }

// laggingCache is c with reads of the objects in stale served as they were
// when it was made: a manager's cache that has not seen their latest writes
// yet.
func laggingCache(t *testing.T, c client.WithWatch, stale ...client.Object) client.WithWatch {
	t.Helper()
	held := map[client.ObjectKey]client.Object{}
	for _, o := range stale {
		cp := o.DeepCopyObject().(client.Object)
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(o), cp))
		held[client.ObjectKeyFromObject(o)] = cp
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if h, ok := held[key]; ok && fmt.Sprintf("%T", h) == fmt.Sprintf("%T", obj) {
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(h)
				if err != nil {
					return err
				}
				return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// recordedEvent is an event an eventLog recorded.
type recordedEvent struct {
	Regarding client.ObjectKey
	Kind      string
	Type      string
	Reason    string
	Action    string
	Note      string
}

// eventLog is an event recorder that keeps what it records.
type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (l *eventLog) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	e := recordedEvent{Type: eventtype, Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)}
	if o, ok := regarding.(client.Object); ok {
		e.Regarding, e.Kind = client.ObjectKeyFromObject(o), fmt.Sprintf("%T", o)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	l.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// recorded returns what l recorded.
func (l *eventLog) recorded() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]recordedEvent(nil), l.events...)
}

// reasons returns the reasons of what l recorded about key.
func (l *eventLog) reasons(key client.ObjectKey) []string {
	var out []string
	for _, e := range l.recorded() {
		if e.Regarding == key {
			out = append(out, e.Reason)
		}
	}
	return out
}

// enqueued returns the requests w queues for the creation of obj, through
// its predicates and its handler.
func enqueued(t *testing.T, w watch, obj client.Object) []reconcile.Request {
	t.Helper()
	for _, p := range w.predicates {
		if !p.Create(event.CreateEvent{Object: obj}) {
			return nil
		}
	}
	q := &controllertest.TypedQueue[reconcile.Request]{TypedInterface: workqueue.NewTyped[reconcile.Request]()}
	defer q.ShutDown()
	w.handler.Create(context.Background(), event.CreateEvent{Object: obj}, q)
	var out []reconcile.Request
	for q.Len() > 0 {
		r, _ := q.Get()
		q.Done(r)
		out = append(out, r)
	}
	return out
}

// watchOf returns the watch of b on objects of obj's Go type.
func watchOf(t *testing.T, b blueprint, obj client.Object) watch {
	t.Helper()
	for _, w := range b.watches {
		if fmt.Sprintf("%T", w.object) == fmt.Sprintf("%T", obj) &&
			w.object.GetObjectKind().GroupVersionKind() == obj.GetObjectKind().GroupVersionKind() {
			return w
		}
	}
	t.Fatalf("no watch of %T %s", obj, obj.GetObjectKind().GroupVersionKind())
	return watch{}
}

// interceptStatus is c with every status write answered by lose (nil: the
// write goes through).
func interceptStatus(c client.WithWatch, lose func(obj client.Object) error) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := lose(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
}

// nilManager is a manager.Manager for a typed nil: (*nilManager)(nil).
type nilManager struct{ manager.Manager }

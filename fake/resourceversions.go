package fake

import (
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// Faker is what client-go's fake clientsets and fake dynamic client share:
// reactors and the object tracker behind them.
type Faker interface {
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
	Tracker() k8stesting.ObjectTracker
}

// EnforceResourceVersions makes client-go's fake clientsets and fake dynamic
// client behave like an API server where optimistic concurrency needs it
// (they keep no resource versions of their own): every create and update through f stamp a
// new resource version on the stored object, and makes an update (of the
// object or a subresource) that names a resource version other than the
// stored one fail with the API server's 409. An update without a resource
// version is unconditional, as on a real API server.
func EnforceResourceVersions(f Faker) {
	var mu sync.Mutex
	next := 1000
	stamp := func(obj runtime.Object) (runtime.Object, error) {
		obj = obj.DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		next++
		m.SetResourceVersion(strconv.Itoa(next))
		return obj, nil
	}
	tracker := f.Tracker()
	f.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		a := action.(k8stesting.CreateAction)
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		obj, err := stamp(a.GetObject())
		if err != nil {
			return true, nil, err
		}
		if err := tracker.Create(a.GetResource(), obj, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	f.PrependReactor("update", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		a := action.(k8stesting.UpdateAction)
		mu.Lock()
		defer mu.Unlock()
		m, err := meta.Accessor(a.GetObject())
		if err != nil {
			return true, nil, err
		}
		gvr, ns := a.GetResource(), a.GetNamespace()
		current, err := tracker.Get(gvr, ns, m.GetName())
		if err != nil {
			return true, nil, err
		}
		cm, err := meta.Accessor(current)
		if err != nil {
			return true, nil, err
		}
		if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
				errStale{have: rv, stored: cm.GetResourceVersion()})
		}
		obj, err := stamp(a.GetObject())
		if err != nil {
			return true, nil, err
		}
		if err := tracker.Update(gvr, obj, ns); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
}

type errStale struct{ have, stored string }

func (e errStale) Error() string {
	return "the object has been modified: resource version " + e.have + " is stale, the stored one is " + e.stored
}

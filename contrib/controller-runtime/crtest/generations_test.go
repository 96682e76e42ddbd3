package crtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	convergefake "github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
)

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 7},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
	}
}

// TestWithGenerationsMovesGenerationsAsTheAPIServerDoes writes a
// Deployment through the fake client, each step after the one before, and
// checks the generation the client keeps after each.
func TestWithGenerationsMovesGenerationsAsTheAPIServerDoes(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c := WithGenerations(fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&appsv1.Deployment{}).Build(), &appsv1.Deployment{})
	key := client.ObjectKey{Namespace: "shop", Name: "web"}
	get := func(t *testing.T) *appsv1.Deployment {
		t.Helper()
		d := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, key, d))
		return d
	}
	steps := []struct {
		name           string
		write          func(t *testing.T) error
		wantGeneration int64
	}{
		{name: "a Create starts at 1, whatever the object says", wantGeneration: 1,
			write: func(*testing.T) error { return c.Create(ctx, deployment()) }},
		{name: "an Update of the spec adds one", wantGeneration: 2, write: func(t *testing.T) error {
			d := get(t)
			d.Spec.Replicas = ptr.To[int32](3)
			return c.Update(ctx, d)
		}},
		{name: "an Update of labels alone keeps it", wantGeneration: 2, write: func(t *testing.T) error {
			d := get(t)
			d.Labels = map[string]string{"tier": "web"}
			return c.Update(ctx, d)
		}},
		{name: "an Update that changes nothing keeps it", wantGeneration: 2,
			write: func(t *testing.T) error { return c.Update(ctx, get(t)) }},
		{name: "an Update that claims another generation gets the API server's", wantGeneration: 2, write: func(t *testing.T) error {
			d := get(t)
			d.Generation = 40
			return c.Update(ctx, d)
		}},
		{name: "a status write keeps it", wantGeneration: 2, write: func(t *testing.T) error {
			d := get(t)
			d.Status.ObservedGeneration = 2
			return c.Status().Update(ctx, d)
		}},
		{name: "a Patch of the spec adds one", wantGeneration: 3, write: func(t *testing.T) error {
			d := get(t)
			before := d.DeepCopy()
			d.Spec.Paused = true
			return c.Patch(ctx, d, client.MergeFrom(before))
		}},
		{name: "a Patch of annotations alone keeps it", wantGeneration: 3, write: func(t *testing.T) error {
			d := get(t)
			before := d.DeepCopy()
			d.Annotations = map[string]string{"note": "x"}
			return c.Patch(ctx, d, client.MergeFrom(before))
		}},
		{name: "a dry-run Patch writes nothing", wantGeneration: 3, write: func(t *testing.T) error {
			d := get(t)
			before := d.DeepCopy()
			d.Spec.Paused = false
			if err := c.Patch(ctx, d, client.MergeFrom(before), client.DryRunAll); err != nil {
				return err
			}
			assert.Equal(t, int64(4), d.Generation, "the dry run answers with the generation it would write")
			return nil
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.NoError(t, s.write(t))
			assert.Equal(t, s.wantGeneration, get(t).Generation)
		})
	}
}

// TestWithGenerationsMovesGenerationsOnServerSideApply writes a ConfigMap
// with server-side apply, as a payload's applier does, each step after the
// one before: an Apply and an apply Patch that create the object start its
// generation at 1, and an Apply moves it as an Update does.
func TestWithGenerationsMovesGenerationsOnServerSideApply(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c := WithGenerations(fake.NewClientBuilder().WithScheme(scheme).Build())
	settings := func(data string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "shop", "name": "settings"},
			"data":     map[string]any{"level": data},
		}}
	}
	apply := func(u *unstructured.Unstructured, opts ...client.ApplyOption) (int64, error) {
		config := client.ApplyConfigurationFromUnstructured(u)
		err := c.Apply(ctx, config, append(opts, client.FieldOwner("test"), client.ForceOwnership)...)
		return u.GetGeneration(), err
	}
	get := func(t *testing.T, name string) int64 {
		t.Helper()
		cm := &corev1.ConfigMap{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, cm))
		return cm.Generation
	}
	steps := []struct {
		name           string
		write          func() (int64, error)
		object         string
		wantGeneration int64
	}{
		{name: "an Apply that creates starts at 1", object: "settings", wantGeneration: 1,
			write: func() (int64, error) { return apply(settings("1")) }},
		{name: "an Apply of the content adds one", object: "settings", wantGeneration: 2,
			write: func() (int64, error) { return apply(settings("2")) }},
		{name: "an Apply that changes nothing keeps it", object: "settings", wantGeneration: 2,
			write: func() (int64, error) { return apply(settings("2")) }},
		{name: "an Apply of labels alone keeps it", object: "settings", wantGeneration: 2, write: func() (int64, error) {
			u := settings("2")
			u.SetLabels(map[string]string{"tier": "web"})
			return apply(u)
		}},
		{name: "a dry-run Apply writes nothing", object: "settings", wantGeneration: 2, write: func() (int64, error) {
			_, err := apply(settings("3"), client.DryRunAll)
			return 2, err
		}},
		{name: "an apply Patch that creates starts at 1", object: "routes", wantGeneration: 1, write: func() (int64, error) {
			u := settings("1")
			u.SetName("routes")
			u.SetManagedFields(nil)
			//nolint:staticcheck // the Patch the fake client creates objects with, as older clients apply
			err := c.Patch(ctx, u, client.Apply, client.FieldOwner("test"), client.ForceOwnership)
			return u.GetGeneration(), err
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			answered, err := s.write()
			require.NoError(t, err)
			assert.Equal(t, s.wantGeneration, answered, "the write answers with the generation it wrote")
			assert.Equal(t, s.wantGeneration, get(t, s.object))
		})
	}
}

func TestWithGenerationsKeepsOnlyTheKindsNamed(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	base := fake.NewClientBuilder().WithScheme(scheme).Build()
	cm := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	}

	c := WithGenerations(base, &appsv1.Deployment{})
	require.NoError(t, c.Create(ctx, cm()))
	got := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cm()), got))
	assert.Zero(t, got.Generation, "a ConfigMap is not a kind named")

	all := WithGenerations(base)
	d := deployment()
	require.NoError(t, all.Create(ctx, d))
	assert.Equal(t, int64(1), d.Generation, "with no kind named, every kind")
}

type unknown struct{ corev1.ConfigMap }

func TestWithGenerationsRejectsAKindTheSchemeDoesNotKnow(t *testing.T) {
	c := WithGenerations(fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), &unknown{})
	err := c.Create(context.Background(), deployment())
	assert.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, "crtest: invalid WithGenerations arguments: kind of *crtest.unknown")
}

var widgetGVK = schema.GroupVersionKind{Group: "test.converge.dev", Version: "v1", Kind: "Widget"}

// widget is an add-on's custom resource as a Go type for the fake client's
// scheme.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]any `json:"spec,omitempty"`
	Status            map[string]any `json:"status,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = runtime.DeepCopyJSON(w.Spec)
	out.Status = runtime.DeepCopyJSON(w.Status)
	return &out
}

// The add-on engine upgrades on a new generation of the spec: on the fake
// client an upgrade happens with WithGenerations, and is ignored without it.
func TestAnAddonUpgradeOnTheFakeClientNeedsGenerations(t *testing.T) {
	tests := []struct {
		name            string
		withGenerations bool
		wantUpgrades    int
		wantVersion     string
	}{
		{name: "with WithGenerations the new version is upgraded to", withGenerations: true, wantUpgrades: 1, wantVersion: "v2"},
		{name: "without it the fake client's generation stays and nothing happens", wantVersion: "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			scheme := runtime.NewScheme()
			scheme.AddKnownTypeWithName(widgetGVK, &widget{})
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(widgetGVK, meta.RESTScopeNamespace)
			status := &unstructured.Unstructured{}
			status.SetGroupVersionKind(widgetGVK)
			var c client.WithWatch = fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithStatusSubresource(status).Build()
			if tt.withGenerations {
				c = WithGenerations(c, &widget{})
			}
			mesh := &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "tke", Name: "mesh"}, Spec: map[string]any{"version": "v1"}}
			mesh.SetGroupVersionKind(widgetGVK)
			require.NoError(t, c.Create(ctx, mesh))
			if !tt.withGenerations {
				mesh.Generation = 1 // as a test that knows the fake client must set it
				require.NoError(t, c.Update(ctx, mesh))
			}

			objects, err := crconverge.NewAddonObjects(c, widgetGVK, kube.AddonObjectsConfig{})
			require.NoError(t, err)
			driver := &convergefake.AddonDriver{}
			m, err := addon.NewMachine(addon.Config{Driver: driver, Store: objects})
			require.NoError(t, err)
			reconcileTimes := func(n int) addon.Status {
				var obj addon.Object
				for range n {
					obj, err = objects.Get(ctx, "tke/mesh")
					require.NoError(t, err)
					_, err = m.Reconcile(ctx, obj)
					require.NoError(t, err)
				}
				obj, err = objects.Get(ctx, "tke/mesh")
				require.NoError(t, err)
				return obj.Status
			}
			require.Equal(t, "v1", reconcileTimes(5).InstalledVersion, "v1 is installed")

			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(mesh), mesh))
			mesh.Spec["version"] = "v2"
			require.NoError(t, c.Update(ctx, mesh))
			st := reconcileTimes(5)
			assert.Equal(t, tt.wantUpgrades, driver.Count(convergefake.AddonUpgrade))
			assert.Equal(t, tt.wantVersion, st.InstalledVersion)
		})
	}
}

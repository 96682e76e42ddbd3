package addonlifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/converge-dev/converge/addon"
)

func TestCheckInstalledFindsWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	obj := newAddon("ns", "mesh", "v1")
	obj.SetUID(types.UID("uid-1"))
	c := &Cluster{
		Kube:    fake.NewClientset(),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonResource: "AddonList"}, obj),
	}
	revision, err := NewDriver(c.Kube).Install(ctx, addon.Request{Spec: addon.Spec{Name: "ns/mesh", Version: "v1"}, To: "v1", Host: obj})
	require.NoError(t, err)
	assert.Empty(t, revision, "the objects keep no revisions")

	assert.NoError(t, checkInstalled(ctx, c, "ns", []string{"mesh"}, "v1"))
	assert.ErrorContains(t, checkInstalled(ctx, c, "ns", []string{"mesh"}, "v2"), `deployment mesh labelled "v1"`)
	assert.ErrorContains(t, checkInstalled(ctx, c, "ns", []string{"other"}, "v1"), "not found")

	other := newAddon("ns", "mesh", "v1")
	other.SetUID(types.UID("uid-2"))
	_, err = c.Dynamic.Resource(AddonResource).Namespace("ns").Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.ErrorContains(t, checkInstalled(ctx, c, "ns", []string{"mesh"}, "v1"), "want its Addon uid-2", "owned by another object")
}

func TestEventsRecordedNeedsEveryReasonOnEveryAddon(t *testing.T) {
	ctx := context.Background()
	event := func(name, addonName, reason, component string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns"},
			InvolvedObject: corev1.ObjectReference{Kind: addonKind, Name: addonName},
			Reason:         reason, Source: corev1.EventSource{Component: component},
		}
	}
	client := fake.NewClientset(
		event("a1", "a", "Created", managedBy), event("a2", "a", "Healthy", managedBy),
		event("b1", "b", "Created", managedBy), event("b2", "b", "Healthy", "someone-else"),
	)
	assert.NoError(t, eventsRecorded(ctx, client, "ns", []string{"a"}, "Created", "Healthy"))
	assert.ErrorContains(t, eventsRecorded(ctx, client, "ns", []string{"a", "b"}, "Created", "Healthy"), "no Healthy event on b",
		"an event of another component does not count")
}

func TestPhaseWatchRecordsEachAddonsHistory(t *testing.T) {
	tests := []struct {
		name    string
		phases  []string
		deleted bool
		// watchErr ends the stream with an error event.
		watchErr bool
		wantErr  string
	}{
		{name: "the whole lifecycle, repeats dropped", phases: []string{"Initializing", "Checking", "Checking", "Running", "Upgrading", "Checking", "Running", "Deleting", "Deleted"}, deleted: true},
		{name: "not gone yet", phases: []string{"Initializing", "Checking", "Running", "Upgrading", "Checking", "Running", "Deleting", "Deleted"}, wantErr: "mesh went"},
		{name: "a watch error", phases: []string{"Initializing"}, watchErr: true, wantErr: "watch event"},
		{name: "a failure on the way", phases: []string{"Initializing", "Reinitializing", "Checking", "Running", "Upgrading", "Checking", "Running", "Deleting", "Deleted"}, deleted: true, wantErr: "mesh went"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &phaseWatch{history: map[string][]string{}}
			obj := newAddon("ns", "mesh", "v1")
			for _, phase := range tt.phases {
				obj = obj.DeepCopy()
				obj.Object["status"] = map[string]any{"phase": phase}
				p.record(watch.Event{Type: watch.Modified, Object: obj})
			}
			if tt.deleted {
				p.record(watch.Event{Type: watch.Deleted, Object: obj})
			}
			if tt.watchErr {
				p.record(watch.Event{Type: watch.Error, Object: &metav1.Status{Message: "gone"}})
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // one look: the history is complete
			err := p.check(ctx, []string{"mesh"})
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/rollout"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A copy shares no memory with its original: the manager's cache hands out
// objects that reconcilers copy before they change them.
func TestDeepCopySharesNothing(t *testing.T) {
	ro := &Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Labels: map[string]string{"a": "b"}},
		Spec:       RolloutSpec{Revision: 3},
		Status: rollout.Status{
			NodeStatuses: []rollout.NodeStatus{{NodeName: "n1", CurrentRevision: 2}},
			Conditions:   []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue}},
		},
	}
	cp := ro.DeepCopy()
	cp.Labels["a"] = "changed"
	cp.Status.NodeStatuses[0].CurrentRevision = 3
	cp.Status.Conditions[0].Status = metav1.ConditionFalse
	assert.Equal(t, "b", ro.Labels["a"])
	assert.Equal(t, int32(2), ro.Status.NodeStatuses[0].CurrentRevision)
	assert.Equal(t, metav1.ConditionTrue, ro.Status.Conditions[0].Status)

	ad := &Addon{Status: addon.Status{History: []addon.Attempt{{Version: "v1"}}}}
	adCopy, ok := ad.DeepCopyObject().(*Addon)
	assert.True(t, ok)
	adCopy.Status.History[0].Version = "v2"
	assert.Equal(t, "v1", ad.Status.History[0].Version)
}

// Each resource is the object its configured controller reconciles.
var (
	_ crconverge.RolloutObject = (*Rollout)(nil)
	_ crconverge.AddonObject   = (*Addon)(nil)
	_ crconverge.PayloadObject = (*Payload)(nil)
)

func TestAccessorsReadTheSpecAndTheStatusField(t *testing.T) {
	ro := &Rollout{Spec: RolloutSpec{Revision: 4, Policy: rollout.Policy{MaxUnavailable: 2}}}
	assert.Equal(t, int32(4), ro.RolloutRevision())
	assert.Equal(t, int32(2), ro.RolloutPolicy().MaxUnavailable)
	ro.RolloutStatus().LatestAvailableRevision = 4
	assert.Equal(t, int32(4), ro.Status.LatestAvailableRevision, "the status accessor is the field itself")

	ad := &Addon{Spec: AddonSpec{Version: "v2", Policy: addon.Policy{MaxRetries: ptr.To[int32](3), Paused: true}}}
	assert.Equal(t, "v2", ad.AddonVersion())
	assert.True(t, ad.AddonPolicy().Paused)
	assert.Equal(t, int32(3), *ad.AddonPolicy().MaxRetries)
	ad.AddonStatus().Phase = addon.PhaseRunning
	assert.Equal(t, addon.PhaseRunning, ad.Status.Phase)

	p := &Payload{Spec: PayloadSpec{Release: "1.1", Policy: payload.Policy{Workers: 3}}}
	assert.Equal(t, payload.Release{Version: "1.1"}, p.PayloadRelease())
	assert.Equal(t, int32(3), p.PayloadPolicy().Workers)
	p.PayloadStatus().Done = 2
	assert.Equal(t, int32(2), p.Status.Done)
}

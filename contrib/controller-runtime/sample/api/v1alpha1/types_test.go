package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
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

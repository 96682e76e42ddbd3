package testapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/rollout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// AddToScheme registers every resource and its list under GroupVersion.
func TestAddToSchemeRegistersEveryKind(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	for _, kind := range []string{"Rollout", "RolloutList", "TenantRollout", "TenantRolloutList", "Addon", "AddonList", "Payload", "PayloadList"} {
		assert.True(t, s.Recognizes(GroupVersion.WithKind(kind)), kind)
	}
}

// A deep copy shares nothing with its original: changing the copy's
// metadata, spec and status leaves the original as it was, in a list too.
func TestDeepCopyObjectSharesNothing(t *testing.T) {
	r := &Rollout{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "1"}},
		Status: rollout.Status{NodeStatuses: []rollout.NodeStatus{{NodeName: "n"}}}}
	a := &Addon{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "1"}},
		Status: addon.Status{History: []addon.Attempt{{Version: "v1"}}}}
	p := &Payload{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "1"}},
		Status: payload.Status{History: []payload.UpdateHistory{{Version: "1"}}}}

	rl := (&RolloutList{Items: []Rollout{*r}}).DeepCopyObject().(*RolloutList)
	rl.Items[0].Labels["a"], rl.Items[0].Status.NodeStatuses[0].NodeName = "2", "m"
	rc := r.DeepCopyObject().(*Rollout)
	rc.Labels["a"], rc.Status.NodeStatuses[0].NodeName = "2", "m"
	assert.Equal(t, "1", r.Labels["a"])
	assert.Equal(t, "n", r.Status.NodeStatuses[0].NodeName)

	ac := a.DeepCopyObject().(*Addon)
	ac.Labels["a"], ac.Status.History[0].Version = "2", "v2"
	al := (&AddonList{Items: []Addon{*a}}).DeepCopyObject().(*AddonList)
	al.Items[0].Status.History[0].Version = "v3"
	assert.Equal(t, "1", a.Labels["a"])
	assert.Equal(t, "v1", a.Status.History[0].Version)

	pc := p.DeepCopyObject().(*Payload)
	pc.Labels["a"], pc.Status.History[0].Version = "2", "2"
	pl := (&PayloadList{Items: []Payload{*p}}).DeepCopyObject().(*PayloadList)
	pl.Items[0].Status.History[0].Version = "3"
	assert.Equal(t, "1", p.Labels["a"])
	assert.Equal(t, "1", p.Status.History[0].Version)

	assert.Nil(t, (&RolloutList{}).DeepCopyObject().(*RolloutList).Items, "a nil list stays nil")
}

// The accessors read the spec and hand out the status itself, which the
// configured controllers write through.
func TestAccessorsReadTheSpecAndWriteTheStatus(t *testing.T) {
	r := &Rollout{Spec: RolloutSpec{Revision: 3, Policy: rollout.Policy{MaxUnavailable: 2}}}
	assert.Equal(t, int32(3), r.RolloutRevision())
	assert.Equal(t, int32(2), r.RolloutPolicy().MaxUnavailable)
	r.RolloutStatus().LatestAvailableRevision = 3
	assert.Equal(t, int32(3), r.Status.LatestAvailableRevision)

	a := &Addon{Spec: AddonSpec{Version: "v2", Policy: addon.Policy{Paused: true}}}
	assert.Equal(t, "v2", a.AddonVersion())
	assert.True(t, a.AddonPolicy().Paused)
	a.AddonStatus().InstalledVersion = "v1"
	assert.Equal(t, "v1", a.Status.InstalledVersion)

	p := &Payload{Spec: PayloadSpec{Release: "4.15.1"}}
	assert.Equal(t, payload.Release{Version: "4.15.1"}, p.PayloadRelease())
	p.PayloadStatus().ObservedGeneration = 4
	assert.Equal(t, int64(4), p.Status.ObservedGeneration)
}

// A TenantRollout's copy shares nothing either, its node selector included;
// its pods live in its namespace.
func TestTenantRollout(t *testing.T) {
	r := &TenantRollout{Rollout: Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"},
		Spec: RolloutSpec{Operand: "kv", NodeSelector: map[string]string{"role": "db"}}}}
	c := r.DeepCopyObject().(*TenantRollout)
	c.Spec.NodeSelector["role"] = "web"
	assert.Equal(t, "db", r.Spec.NodeSelector["role"])
	cfg := r.RolloutPods(kube.RolloutPodsConfig{Namespace: "operand", Operand: "etcd"})
	assert.Equal(t, "team-a", cfg.Namespace)
	assert.Equal(t, "kv", cfg.Operand)
	assert.True(t, cfg.NodeSelector.Matches(labels.Set{"role": "db"}))
	assert.False(t, cfg.NodeSelector.Matches(labels.Set{"role": "web"}))
}

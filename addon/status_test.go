package addon_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

func fullStatus() addon.Status {
	return addon.Status{
		Phase: addon.PhaseChecking, Reason: "UpgradeSucceeded", Message: "upgrade from v1 to v2 succeeded",
		PendingAction: addon.ActionCheckHealth, NextAttemptTime: at(t0.Add(5 * time.Second)), Deadline: at(t0.Add(time.Minute)),
		InFlight:  &addon.Claim{Action: addon.ActionTest, Owner: "m1", From: "v2", To: "v2", Started: metav1.NewTime(t0), Expires: metav1.NewTime(t0.Add(time.Minute))},
		Verifying: addon.ActionUpgrade, LastFailedAction: addon.ActionUpgrade, InstallFailures: 1, UpgradeFailures: 2, UninstallFailures: 3, Failures: 4,
		LastTransitionTime: metav1.NewTime(t0), LastAttemptTime: at(t0), InstalledVersion: "v2", LastGoodVersion: "v1",
		FailedVersion: "v3", ObservedGeneration: 4, LastResetToken: "r", LastForceToken: "f", HeldSince: at(t0), Holds: []converge.Hold{converge.PausedHold("no install, upgrade or test is started")},
		Health: addon.HealthUnknown, HealthUnknownSince: at(t0),
		History:    []addon.Attempt{{Action: addon.ActionUpgrade, Version: "v2", Outcome: addon.OutcomeSucceeded, Started: metav1.NewTime(t0), Finished: metav1.NewTime(t0)}},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Checking", LastTransitionTime: metav1.NewTime(t0)}},
	}
}

func TestStatusDeepCopySharesNothing(t *testing.T) {
	s := fullStatus()
	c := s.DeepCopy()
	require.Equal(t, s, *c)
	c.NextAttemptTime.Time = t0.Add(time.Hour)
	c.Deadline.Time = t0.Add(time.Hour)
	c.InFlight.Owner = "m2"
	c.History[0].Version = "v9"
	c.Conditions[0].Reason = "Changed"
	assert.Equal(t, fullStatus(), s, "the original is untouched")
	var nilStatus *addon.Status
	assert.Nil(t, nilStatus.DeepCopy())
}

func TestStatusJSONRoundTrip(t *testing.T) {
	s := fullStatus()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back addon.Status
	require.NoError(t, json.Unmarshal(b, &back))
	rb, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(rb))

	empty, err := json.Marshal(addon.Status{})
	require.NoError(t, err)
	assert.Equal(t, `{"lastTransitionTime":null}`, string(empty), "a zero status is small")
}

// TestEmbeddableTypesHaveNoFloats keeps Status and Policy embeddable in a
// CRD: no floating-point or time.Duration field anywhere.
func TestEmbeddableTypesHaveNoFloats(t *testing.T) {
	var walk func(path string, typ reflect.Type, seen map[reflect.Type]bool)
	walk = func(path string, typ reflect.Type, seen map[reflect.Type]bool) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Float32, reflect.Float64, reflect.Func:
			t.Errorf("%s is a %s", path, typ)
		case reflect.Pointer, reflect.Slice:
			walk(path, typ.Elem(), seen)
		case reflect.Struct:
			if typ == reflect.TypeOf(metav1.Duration{}) || typ == reflect.TypeOf(metav1.Time{}) {
				return // the API's own types, as CRDs embed them
			}
			if typ == reflect.TypeOf(time.Duration(0)) {
				t.Errorf("%s is a time.Duration", path)
			}
			for i := range typ.NumField() {
				f := typ.Field(i)
				if f.Type == reflect.TypeOf(time.Duration(0)) {
					t.Errorf("%s.%s is a time.Duration", path, f.Name)
				}
				walk(path+"."+f.Name, f.Type, seen)
			}
		}
	}
	walk("Status", reflect.TypeOf(addon.Status{}), map[reflect.Type]bool{})
	walk("Policy", reflect.TypeOf(addon.Policy{}), map[reflect.Type]bool{})
}

func TestStoredTimesAreTruncatedToSeconds(t *testing.T) {
	d, err := addon.Decide(addon.Input{Spec: meshSpec, Now: t0.Add(1500 * time.Millisecond)})
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Second), d.Status.LastTransitionTime.Time)
	assert.Equal(t, t0.Add(time.Second), d.Status.LastAttemptTime.Time)
	for _, c := range d.Status.Conditions {
		assert.Equal(t, t0.Add(time.Second), c.LastTransitionTime.Time, c.Type)
	}
}

package addontest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

// TestExploreChecksWhatAStaleStatusDecides: a look at the status before
// the latest write is held to the rules on what reaches the host when it
// writes nothing (a Deleted read from it while the cluster still runs a
// version breaks them); a decision that writes is refused by the Store and
// breaks none, whatever it chose.
func TestExploreChecksWhatAStaleStatusDecides(t *testing.T) {
	e := &explorer{opts: ExploreOptions{Table: addon.DefaultTable()}, limits: exploreLimitsOf(addon.Policy{}), reasons: map[string]bool{}}
	now := metav1.NewTime(exploreEpoch)
	spec := addon.Spec{Name: "explore/addon", Generation: 1, Version: "v1", Deleting: true}
	// deleted is a Deleted status as Decide leaves it, conditions written.
	d, err := addon.Decide(addon.Input{Spec: spec, Status: addon.Status{Phase: addon.PhaseDeleted, ObservedGeneration: 1, SeenGeneration: 1, LastTransitionTime: now}, Now: exploreEpoch})
	require.NoError(t, err)
	deleted := d.Status
	initializing := addon.Status{Phase: addon.PhaseInitializing, PendingAction: addon.ActionInstall, ObservedGeneration: 1, SeenGeneration: 1,
		LastTransitionTime: now, Deadline: &metav1.Time{Time: exploreEpoch.Add(10 * time.Minute)}}
	require.NoError(t, initializing.Validate())

	for _, tc := range []struct {
		name    string
		older   addon.Status
		spec    addon.Spec
		cluster string
		acts    addon.Action // what Decide chooses on the stale status
		broken  string
	}{
		{name: "Deleted while the cluster runs a version", older: deleted, spec: spec, cluster: "v1", broken: `Deleted from a stale status while the cluster runs "v1"`},
		{name: "Deleted with the cluster empty", older: deleted, spec: spec},
		{name: "an Install claimed while v1 runs is refused", older: initializing, spec: addon.Spec{Name: spec.Name, Generation: 1, Version: "v1"}, cluster: "v1", acts: addon.ActionInstall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := addon.Decide(e.input(tc.spec, tc.older, exploreEpoch, addon.Observation{}, 0))
			require.NoError(t, err)
			require.Equal(t, tc.acts, d.Action)
			s := &exploreState{spec: tc.spec, older: &tc.older, now: exploreEpoch, world: exploreWorld{cluster: tc.cluster}}
			err = e.lookStale(s)
			if tc.broken == "" {
				require.NoError(t, err)
				return
			}
			var ee *ExploreError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, tc.broken, ee.Rule)
		})
	}
}

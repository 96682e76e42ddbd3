package addon

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExploreChecksWhatAStaleStatusDecides: a look at the status before
// the latest write is held to the rules on what reaches the host when it
// writes nothing (a Deleted read from it while the cluster still runs a
// version breaks them); a decision that writes is refused by the Store and
// breaks none, whatever it chose.
func TestExploreChecksWhatAStaleStatusDecides(t *testing.T) {
	e := &explorer{opts: ExploreOptions{Table: defaultTable}, limits: exploreLimitsOf(Policy{})}
	now := metav1.NewTime(exploreEpoch)
	spec := Spec{Name: "explore/addon", Generation: 1, Version: "v1", Deleting: true}
	// deleted is a Deleted status as Decide leaves it, conditions written.
	d, err := Decide(Input{Spec: spec, Status: Status{Phase: PhaseDeleted, ObservedGeneration: 1, SeenGeneration: 1, LastTransitionTime: now}, Now: exploreEpoch})
	require.NoError(t, err)
	deleted := d.Status
	initializing := Status{Phase: PhaseInitializing, PendingAction: ActionInstall, ObservedGeneration: 1, SeenGeneration: 1,
		LastTransitionTime: now, Deadline: &metav1.Time{Time: exploreEpoch.Add(10 * time.Minute)}}
	require.NoError(t, initializing.Validate())

	for _, tc := range []struct {
		name    string
		older   Status
		spec    Spec
		cluster string
		acts    Action // what Decide chooses on the stale status
		broken  string
	}{
		{name: "Deleted while the cluster runs a version", older: deleted, spec: spec, cluster: "v1", broken: `Deleted from a stale status while the cluster runs "v1"`},
		{name: "Deleted with the cluster empty", older: deleted, spec: spec},
		{name: "an Install claimed while v1 runs is refused", older: initializing, spec: Spec{Name: spec.Name, Generation: 1, Version: "v1"}, cluster: "v1", acts: ActionInstall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(e.input(tc.spec, tc.older, exploreEpoch, Observation{}))
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

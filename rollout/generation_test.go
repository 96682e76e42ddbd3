package rollout_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// TestDecideStampsTheObservedGeneration: the decided status observes the
// input's generation, never goes back to an older one, and a new
// generation alone is a status change.
func TestDecideStampsTheObservedGeneration(t *testing.T) {
	settled := fake.NewRolloutStatusStore(2, 2, "a").Status
	settledObs := rollout.Observation{"a": {Operand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 2}}}
	first, err := rollout.Decide(rollout.Input{Status: settled, Observation: settledObs, Now: t0})
	require.NoError(t, err)
	settled = first.Final
	tests := []struct {
		name        string
		observed    int64
		generation  int64
		want        int64
		wantChanged bool
	}{
		{name: "a new generation is observed, and that alone is a change to write", observed: 3, generation: 4, want: 4, wantChanged: true},
		{name: "the generation already observed writes nothing", observed: 4, generation: 4, want: 4},
		{name: "an older generation (a stale read) does not take the observed one back", observed: 5, generation: 4, want: 5},
		{name: "a host without generations keeps the observed one", observed: 5, generation: 0, want: 5},
		{name: "the first generation is observed", observed: 0, generation: 1, want: 1, wantChanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := *settled.DeepCopy()
			st.ObservedGeneration = tt.observed
			d, err := rollout.Decide(rollout.Input{Status: st, Observation: settledObs, Now: t0, Generation: tt.generation})
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.Status.ObservedGeneration)
			assert.Equal(t, tt.want, d.Final.ObservedGeneration)
			assert.Equal(t, tt.wantChanged, d.StatusChanged)
		})
	}
}

func TestDecideRefusesANegativeGeneration(t *testing.T) {
	_, err := rollout.Decide(rollout.Input{Status: rollout.Status{}, Now: t0, Generation: -1})
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, "negative Generation -1")
	_, err = rollout.NewController(rollout.Config{Status: &fake.RolloutStatusStore{}, Installers: fake.NewRolloutCluster(nil, 1),
		Operands: fake.NewRolloutCluster(nil, 1), Generation: -1})
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, "Generation -1 is negative")
}

// TestSyncWritesTheConfiguredGeneration: a sync stamps Config.Generation
// on the status it writes.
func TestSyncWritesTheConfiguredGeneration(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	store := fake.NewRolloutStatusStore(1, 1, "a")
	c, err := rollout.NewController(rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster,
		Clock: clk, Generation: 7})
	require.NoError(t, err)
	_, err = c.Sync(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(7), store.Current().ObservedGeneration)
}

package payload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestPlanRunsEachStateInItsOrder: Initializing runs every component at once, the
// component with the most manifests left first; Updating runs run levels in order and
// Reconciling every component at once, shuffled by pass, both in the cluster-version
// operator's order; each state with its own pool.
func TestPlanRunsEachStateInItsOrder(t *testing.T) {
	manifests := []manifest.Manifest{
		*manifestOf(newTask("0000_10_a_00_ns.yaml", podGVK)), *manifestOf(newTask("0000_10_b_00_ns.yaml", podGVK)),
		*manifestOf(newTask("0000_20_a_01_cm.yaml", podGVK)), *manifestOf(newTask("0000_20_c_00_cm.yaml", podGVK)),
	}
	p := Policy{}.withDefaults()
	tests := []struct {
		state   State
		pass    int32
		build   func([]*graph.Task) (*graph.Graph, error)
		workers int
		order   graph.Priority
	}{
		{StateInitializing, 0, func(t []*graph.Task) (*graph.Graph, error) { return graph.Build(t, graph.OrderParallel) }, 16, graph.CriticalPathFirst},
		{StateUpdating, 0, func(t []*graph.Task) (*graph.Graph, error) { return graph.Build(t, graph.OrderRunLevels) }, 8, graph.LowestIndexFirst},
		{StateReconciling, 11, func(t []*graph.Task) (*graph.Graph, error) { return graph.BuildShuffled(t, 11) }, 2, graph.LowestIndexFirst},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			g, opts, err := plan(manifests, tt.state, tt.pass, p)
			require.NoError(t, err)
			want, err := tt.build(manifest.Tasks(manifests))
			require.NoError(t, err)
			assert.Equal(t, want.String(), g.String())
			assert.Equal(t, graph.Options{Workers: tt.workers, Priority: tt.order}, opts)
		})
	}
}

package rollout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// TestHoldReasonsListsEveryExportedReason: HoldReasons is the closed list
// of the Hold* constants holds.go exports, sorted, each a distinct CamelCase
// word, so that a reason added to the constants is added to the list.
func TestHoldReasonsListsEveryExportedReason(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "holds.go", nil, 0)
	require.NoError(t, err)
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for i, name := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(name.Name, "Hold") && name.IsExported() {
					declared = append(declared, holdValue(t, spec.(*ast.ValueSpec).Values[i]))
				}
			}
		}
	}
	slices.Sort(declared)
	assert.Equal(t, declared, HoldReasons())
	assert.Len(t, slices.Compact(slices.Clone(declared)), len(declared), "each reason once")
	for _, r := range HoldReasons() {
		assert.Regexp(t, `^[A-Z][A-Za-z]+$`, r)
	}
}

// holdValue is the value of a Hold constant: a string literal, or one of
// the reasons every engine shares from the root package.
func holdValue(t *testing.T, e ast.Expr) string {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		shared := map[string]string{"HoldPaused": converge.HoldPaused, "HoldWindowClosed": converge.HoldWindowClosed}
		v, ok := shared[sel.Sel.Name]
		require.True(t, ok, "%s is not a shared reason", sel.Sel.Name)
		return v
	}
	lit, ok := e.(*ast.BasicLit)
	require.True(t, ok, "a hold reason is a string literal or a shared reason")
	v, err := strconv.Unquote(lit.Value)
	require.NoError(t, err)
	return v
}

// TestHoldsArePersistedBoundedAndSorted: Decision.Holds has every hold,
// sorted; Status.Holds the first converge.MaxHolds; the conditions name a
// bounded number of each reason's holds.
func TestHoldsArePersistedBoundedAndSorted(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, HeldSince: mt(t0)}
	obs := Observation{}
	for i := range 40 {
		name := fmt.Sprintf("node-%02d", i)
		st.NodeStatuses = append(st.NodeStatuses, node(name, 1, 0))
		obs[name] = NodeObservation{Unreachable: true}
	}
	d, err := Decide(Input{Status: st, Observation: obs, Now: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Len(t, d.Holds, 40)
	assert.True(t, slices.IsSortedFunc(d.Holds, converge.CompareHolds))
	assert.Equal(t, heldBy{HoldNodeUnreachable, "node-00"}, holdsOf(d.Holds)[0])
	assert.Equal(t, d.Holds[:converge.MaxHolds], d.Status.Holds, "the first MaxHolds persist")
	deg := condition(d, conditions.TypeDegraded)
	assert.Equal(t, maxListedNodes, strings.Count(deg.Message, "is unreachable and cannot move"))
	assert.Contains(t, deg.Message, "… and 20 more")

	again, err := Decide(Input{Status: d.Final, Observation: obs, Now: t0.Add(2 * time.Hour)})
	require.NoError(t, err)
	assert.False(t, again.StatusChanged, "the same holds later write nothing")
}

// TestPauseAndSoakAreWaits: a pause and a soak are holds of their own
// (HoldPaused, HoldSoaking), which Progressing says, but alone they are
// waits: they set no HeldSince, leave Progressing NodesProgressing and never
// turn Degraded, however long they last.
func TestPauseAndSoakAreWaits(t *testing.T) {
	long := mt(t0)
	soaking := NodeObservation{Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: t0.Add(time.Hour - time.Second)}}
	runDecideCases(t, []decideCase{
		{
			name:   "a pause that stops a start",
			st:     Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0)}},
			obs:    Observation{"a": ready(1), "b": ready(1)},
			policy: Policy{Paused: true},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d))
				assert.Equal(t, []heldBy{{HoldPaused, ""}}, holdsOf(d.Holds))
				assert.Nil(t, d.Status.HeldSince)
				assert.Equal(t, ReasonNodesProgressing, condition(d, conditions.TypeProgressing).Reason)
				assert.Contains(t, condition(d, conditions.TypeProgressing).Message, "paused: no node is started")
			},
		},
		{
			name: "a pause while a node installs: the rollout has nodes to move",
			st: Status{LatestAvailableRevision: 2, HeldSince: long, NodeStatuses: []NodeStatus{
				ordered(node("a", 1, 2), t0.Add(time.Hour)), node("b", 1, 0)}},
			obs:    Observation{"a": withInstaller(ready(1), InstallerRunning), "b": ready(1)},
			policy: Policy{Paused: true},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []heldBy{{HoldPaused, ""}}, holdsOf(d.Holds))
				assert.Nil(t, d.Status.HeldSince, "a pause is not held, however long")
				assert.Equal(t, metav1.ConditionFalse, condition(d, conditions.TypeDegraded).Status)
			},
		},
		{
			name:   "a pause of a rollout at the latest revision everywhere holds nothing",
			st:     Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0)}},
			obs:    Observation{"a": ready(2)},
			policy: Policy{Paused: true},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, d.Holds)
			},
		},
		{
			name:   "a soak alone",
			st:     Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 2, 0)}},
			obs:    Observation{"a": ready(1), "b": soaking},
			policy: Policy{MinReadyDuration: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []heldBy{{HoldSoaking, "a"}}, holdsOf(d.Holds))
				assert.Nil(t, d.Status.HeldSince)
				assert.Equal(t, ReasonNodesProgressing, condition(d, conditions.TypeProgressing).Reason)
				assert.Contains(t, condition(d, conditions.TypeProgressing).Message, "operands soaking before a starts revision 2")
				assert.Equal(t, metav1.ConditionFalse, condition(d, conditions.TypeDegraded).Status)
			},
		},
	})
}

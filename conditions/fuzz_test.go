package conditions

import (
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

var (
	fuzzTypes    = []string{"Available", "Ready", "Progressing", "Degraded", "Reconciling", "Stalled", "Alpha", "Beta", "example.com/Zeta", ""}
	fuzzStatuses = []metav1.ConditionStatus{True, False, Unknown, "Bogus"}
	fuzzReasons  = []string{"", "Reason", "Other", "not valid"}
	fuzzMessages = []string{"", "message", "another message"}
)

// fuzzConditions decodes data, three bytes a condition.
func fuzzConditions(data []byte) []metav1.Condition {
	var out []metav1.Condition
	for i := 0; i+2 < len(data); i += 3 {
		out = append(out, metav1.Condition{
			Type:    fuzzTypes[int(data[i])%len(fuzzTypes)],
			Status:  fuzzStatuses[int(data[i+1])%len(fuzzStatuses)],
			Reason:  fuzzReasons[int(data[i+2])%len(fuzzReasons)],
			Message: fuzzMessages[int(data[i+2]/4)%len(fuzzMessages)],
		})
	}
	return out
}

// FuzzSet checks two invariants of Set: setting conditions of distinct types
// in any order yields the same sorted list, and a condition's transition
// time never moves without a change of its status.
func FuzzSet(f *testing.F) {
	f.Add([]byte{0, 0, 1, 3, 1, 1, 6, 2, 2}, int64(1))
	f.Add([]byte{1, 1, 0, 1, 0, 1, 1, 0, 5, 1, 2, 0}, int64(7))
	f.Add([]byte{9, 0, 1, 2, 3, 3, 8, 1, 9}, int64(42))
	f.Fuzz(func(t *testing.T, data []byte, seed int64) {
		ops := fuzzConditions(data)

		// Order independence over distinct types.
		var distinct []metav1.Condition
		for _, c := range ops {
			if !slices.ContainsFunc(distinct, func(d metav1.Condition) bool { return d.Type == c.Type }) {
				distinct = append(distinct, c)
			}
		}
		shuffled := slices.Clone(distinct)
		rand.New(rand.NewSource(seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var a, b []metav1.Condition
		for i := range distinct {
			// Bad input is rejected whatever the order; the timeline below checks the errors.
			_, _ = Set(&a, distinct[i], t0)
			_, _ = Set(&b, shuffled[i], t0)
		}
		require.Equal(t, a, b, "the same conditions set in another order")
		sorted := slices.Clone(a)
		Sort(sorted)
		require.Equal(t, sorted, a, "Set keeps the list sorted")

		// Transition times along a timeline.
		var conds []metav1.Condition
		for i, c := range ops {
			now := t0.Add(time.Duration(i) * 1500 * time.Millisecond)
			before := slices.Clone(conds)
			old, existed := Get(conds, c.Type)
			changed, err := Set(&conds, c, now)
			if err != nil {
				require.ErrorIs(t, err, converge.ErrInvalid)
				require.Equal(t, before, conds, "bad input loses nothing")
				continue
			}
			got, ok := Get(conds, c.Type)
			require.True(t, ok)
			require.NoError(t, Validate(got))
			switch {
			case !existed || old.Status != got.Status:
				require.True(t, changed)
				require.True(t, got.LastTransitionTime.Time.Equal(now.Truncate(time.Second)))
			default:
				require.True(t, got.LastTransitionTime.Equal(&old.LastTransitionTime), "transition time moved without a status change")
			}
			for _, prev := range before {
				if prev.Type == c.Type {
					continue
				}
				cur, ok := Get(conds, prev.Type)
				require.True(t, ok)
				require.Equal(t, prev, cur, "another condition changed")
			}
			seen := map[string]bool{}
			for _, c := range conds {
				require.False(t, seen[c.Type], "duplicate type %q", c.Type)
				seen[c.Type] = true
			}
		}
	})
}

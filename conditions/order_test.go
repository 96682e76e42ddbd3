package conditions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSort(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{name: "empty", in: nil, want: []string{}},
		{name: "well-known types in their order", in: []string{"Stalled", "Reconciling", "Degraded", "Progressing", "Ready", "Available"}, want: []string{"Available", "Ready", "Progressing", "Degraded", "Reconciling", "Stalled"}},
		{name: "others alphabetical after the well-known", in: []string{"Zeta", "Alpha", "Degraded", "Beta", "Available"}, want: []string{"Available", "Degraded", "Alpha", "Beta", "Zeta"}},
		{name: "already sorted stays", in: []string{"Ready", "A", "B"}, want: []string{"Ready", "A", "B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := make([]metav1.Condition, 0, len(tt.in))
			for _, typ := range tt.in {
				conds = append(conds, cond(typ, True, "R", ""))
			}
			Sort(conds)
			assert.Equal(t, tt.want, types(conds))
		})
	}
}

func TestSortKeepsDuplicatesInOrder(t *testing.T) {
	conds := []metav1.Condition{cond("B", True, "First", ""), cond("A", True, "R", ""), cond("B", True, "Second", "")}
	Sort(conds)
	assert.Equal(t, []string{"A", "B", "B"}, types(conds))
	assert.Equal(t, "First", conds[1].Reason)
	assert.Equal(t, "Second", conds[2].Reason)
}

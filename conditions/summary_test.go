package conditions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

func TestSummary(t *testing.T) {
	forTypes := []string{"Available", "Degraded", "Progressing"}
	tests := []struct {
		name  string
		conds []metav1.Condition
		opts  SummaryOptions
		want  metav1.Condition
	}{
		{
			name:  "all good",
			conds: []metav1.Condition{cond("Available", True, "Up", "3 replicas"), cond("Degraded", False, "AsExpected", ""), cond("Progressing", False, "Done", "")},
			opts:  SummaryOptions{ForTypes: forTypes},
			want:  cond("Ready", True, ReasonInfoReported, "* Available: 3 replicas"),
		},
		{
			name:  "single good source gives its reason",
			conds: []metav1.Condition{cond("Available", True, "Up", "")},
			opts:  SummaryOptions{ForTypes: []string{"Available"}},
			want:  cond("Ready", True, "Up", ""),
		},
		{
			name:  "one issue gives its reason",
			conds: []metav1.Condition{cond("Available", True, "Up", ""), cond("Degraded", True, "Crashing", "pod crashes"), cond("Progressing", False, "Done", "")},
			opts:  SummaryOptions{ForTypes: forTypes},
			want:  cond("Ready", False, "Crashing", "* Degraded: pod crashes"),
		},
		{
			name:  "issues rank above unknowns above info",
			conds: []metav1.Condition{cond("Available", Unknown, "NoData", "cannot tell"), cond("Degraded", True, "Crashing", "pod crashes"), cond("Progressing", True, "Rolling", "rolling out"), cond("Extra", True, "X", "info")},
			opts:  SummaryOptions{ForTypes: []string{"Available", "Degraded", "Progressing", "Extra"}},
			want:  cond("Ready", False, ReasonIssuesReported, "* Degraded: pod crashes\n* Progressing: rolling out\n* Available: cannot tell\n* Extra: info"),
		},
		{
			name:  "missing types are not yet reported",
			conds: []metav1.Condition{cond("Available", True, "Up", "")},
			opts:  SummaryOptions{ForTypes: forTypes},
			want:  cond("Ready", Unknown, ReasonUnknownReported, "* Degraded: Condition not yet reported\n* Progressing: Condition not yet reported"),
		},
		{
			name:  "one missing type gives NotYetReported",
			conds: []metav1.Condition{cond("Available", True, "Up", "")},
			opts:  SummaryOptions{ForTypes: []string{"Available", "Degraded"}},
			want:  cond("Ready", Unknown, ReasonNotYetReported, "* Degraded: Condition not yet reported"),
		},
		{
			name:  "issue without message shows its reason",
			conds: []metav1.Condition{cond("Available", False, "Down", "")},
			opts:  SummaryOptions{ForTypes: []string{"Available"}},
			want:  cond("Ready", False, "Down", "* Available: Down"),
		},
		{
			name:  "host polarity and custom type",
			conds: []metav1.Condition{cond("Throttled", True, "TooMany", "429s"), cond("Available", True, "Up", "")},
			opts:  SummaryOptions{Type: "Healthy", ForTypes: []string{"Available", "Throttled"}, Polarities: Polarities{"Throttled": Negative}},
			want:  cond("Healthy", False, "TooMany", "* Throttled: 429s"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Summary(tt.conds, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			require.NoError(t, Validate(got))
		})
	}
}

func TestSummaryBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts SummaryOptions
	}{
		{name: "no types", opts: SummaryOptions{}},
		{name: "negative summary type", opts: SummaryOptions{Type: "Degraded", ForTypes: []string{"Available"}}},
		{name: "duplicate type", opts: SummaryOptions{ForTypes: []string{"Available", "Available"}}},
		{name: "empty type in the list", opts: SummaryOptions{ForTypes: []string{""}}},
		{name: "own type in the list", opts: SummaryOptions{ForTypes: []string{"Ready"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Summary(nil, tt.opts)
			require.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
}

func TestSummaryStaysWithinTheMessageLimit(t *testing.T) {
	var conds []metav1.Condition
	var types []string
	for i := 0; i < 10; i++ {
		typ := fmt.Sprintf("Part%dDegraded", i)
		types = append(types, typ)
		conds = append(conds, cond(typ, True, "Broken", strings.Repeat("x", 5000)))
	}
	got, err := Summary(conds, SummaryOptions{ForTypes: types})
	require.NoError(t, err)
	assert.Equal(t, False, got.Status)
	assert.LessOrEqual(t, len(got.Message), MaxMessageLength)
	assert.True(t, strings.HasSuffix(got.Message, "… and 4 more"), got.Message[len(got.Message)-30:])
	require.NoError(t, Validate(got))
}

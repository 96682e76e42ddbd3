package conditions

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		cond      metav1.Condition
		wantField string
	}{
		{name: "valid true", cond: cond("Ready", True, "AsExpected", "")},
		{name: "valid false", cond: cond("Degraded", False, "AsExpected", "fine")},
		{name: "valid unknown without reason", cond: cond("Ready", Unknown, "", "")},
		{name: "valid true without reason", cond: cond("Ready", True, "", "")},
		{name: "valid domain-prefixed type", cond: cond("example.com/Ready", True, "Done", "")},
		{name: "valid reason with separators", cond: cond("Degraded", True, "Foo_Crashing::Bar_Slow,X", "")},
		{name: "empty type", cond: cond("", True, "R", ""), wantField: "type"},
		{name: "type with spaces", cond: cond("Not Ready", True, "R", ""), wantField: "type"},
		{name: "type too long", cond: cond(strings.Repeat("A", 317), True, "R", ""), wantField: "type"},
		{name: "empty status", cond: cond("Ready", "", "R", ""), wantField: "status"},
		{name: "lower-case status", cond: cond("Ready", "true", "R", ""), wantField: "status"},
		{name: "empty reason on false", cond: cond("Ready", False, "", "broken"), wantField: "reason"},
		{name: "reason with spaces", cond: cond("Ready", True, "All good", ""), wantField: "reason"},
		{name: "reason starting with a digit", cond: cond("Ready", True, "1Reason", ""), wantField: "reason"},
		{name: "reason too long", cond: cond("Ready", True, "R"+strings.Repeat("a", 1024), ""), wantField: "reason"},
		{name: "message too long", cond: cond("Ready", True, "R", strings.Repeat("m", 32769)), wantField: "message"},
		{name: "negative generation", cond: metav1.Condition{Type: "Ready", Status: True, Reason: "R", ObservedGeneration: -1}, wantField: "observedGeneration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.cond)
			if tt.wantField == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			var ie *InvalidError
			require.True(t, errors.As(err, &ie))
			assert.Equal(t, tt.wantField, ie.Field)
			assert.True(t, strings.HasPrefix(err.Error(), "conditions: "), err.Error())
		})
	}
}

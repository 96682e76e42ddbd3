package conditions

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
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
			assert.ErrorIs(t, err, converge.ErrInvalid)
			var ie *InvalidError
			require.True(t, errors.As(err, &ie))
			assert.Equal(t, tt.wantField, ie.Field)
			assert.True(t, strings.HasPrefix(err.Error(), "conditions: "), err.Error())
		})
	}
}

// The API server's own patterns for a condition type and reason; the
// hand-written matchers must agree with them on every input.
var (
	apiTypePattern   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`)
	apiReasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
)

func TestMatchersAgreeWithAPIPatterns(t *testing.T) {
	inputs := []string{
		"", "a", "A", "9", "-", "_", ".", "/", "a/", "/a", "a/b", "a/b/c", "A/b", "a-/b", "-a/b", "a.b/C", "a..b/C", "a.b./C",
		"Ready", "example.com/Ready", "ex_ample.com/Ready", "Ready-", "Ready.", "Re.ady", "Re_ady", "Re-ady", "Not Ready",
		"a,", "a:", "a_", "a,b", "a:b", "A1", "1A", "Foo_Crashing::Bar_Slow,X", "AsExpected", "x.y-z/0_9", "héllo",
	}
	for _, s := range inputs {
		assert.Equal(t, apiTypePattern.MatchString(s), validType(s), "type %q", s)
		assert.Equal(t, apiReasonPattern.MatchString(s), validReason(s), "reason %q", s)
	}
}

func FuzzMatchersAgreeWithAPIPatterns(f *testing.F) {
	for _, s := range []string{"Ready", "example.com/Ready", "Foo_Bar::Baz,Q", "a-b.c/D_e", "1x", "x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validType(s), apiTypePattern.MatchString(s); got != want {
			t.Fatalf("validType(%q) = %v, the API pattern says %v", s, got, want)
		}
		if got, want := validReason(s), apiReasonPattern.MatchString(s); got != want {
			t.Fatalf("validReason(%q) = %v, the API pattern says %v", s, got, want)
		}
	})
}

func TestValidateAllocatesNothingForAValidCondition(t *testing.T) {
	c := cond("example.com/Ready", True, "Foo_Crashing::Bar_Slow", "fine")
	allocs := testing.AllocsPerRun(100, func() {
		if err := Validate(c); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

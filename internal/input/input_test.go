package input

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     string
		problems []string
	}{
		{name: "no problem is no error", err: Invalid("rollout", "policy")},
		{name: "one problem", err: Invalid("rollout", "policy", "maxUnavailable -1 is negative"),
			want: "rollout: invalid policy: maxUnavailable -1 is negative", problems: []string{"maxUnavailable -1 is negative"}},
		{name: "several problems", err: Invalid("addon", "config", "nil driver", "nil store"),
			want: "addon: invalid config: nil driver; nil store", problems: []string{"nil driver", "nil store"}},
		{name: "a formatted problem", err: Invalidf("payload", "manifest", "%s has no kind", "a.yaml"),
			want: "payload: invalid manifest: a.yaml has no kind", problems: []string{"a.yaml has no kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == "" {
				assert.NoError(t, tt.err)
				return
			}
			assert.ErrorIs(t, tt.err, ErrInvalid)
			assert.Equal(t, tt.want, tt.err.Error())
			assert.Equal(t, tt.problems, Problems(tt.err, ""))
		})
	}
}

func TestProblemsFoldsAPartsProblemsUnderAPrefix(t *testing.T) {
	part := Invalid("converge", "backoff", "factorPercent 50 is below 100", "max -1s is negative")
	assert.Equal(t, []string{"backoff: factorPercent 50 is below 100", "backoff: max -1s is negative"},
		Problems(fmt.Errorf("wrapped: %w", part), "backoff: "))
	assert.Equal(t, []string{"backoff: boom"}, Problems(errors.New("boom"), "backoff: "))
	assert.Nil(t, Problems(nil, "backoff: "))
}

type nilPointerer struct{}

func (*nilPointerer) String() string { return "" }

func TestIsNil(t *testing.T) {
	var (
		p  *nilPointerer
		fn func()
		m  map[string]int
		ch chan int
		s  []int
		st fmt.Stringer = p
	)
	for name, v := range map[string]any{"nil": nil, "nil pointer": p, "nil func": fn, "nil map": m, "nil chan": ch, "nil slice": s, "typed nil interface": st} {
		assert.True(t, IsNil(v), name)
	}
	for name, v := range map[string]any{"pointer": &nilPointerer{}, "func": func() {}, "map": map[string]int{}, "struct": struct{}{}, "int": 0, "string": ""} {
		assert.False(t, IsNil(v), name)
	}
}

func TestFieldsUseOneWording(t *testing.T) {
	var nilPtr *struct{ stringer }
	tests := []struct {
		name   string
		fields []FieldValue
		want   []string
	}{
		{name: "a set field is no problem", fields: []FieldValue{{"Status", stringer{}, true}}},
		{name: "an optional field left nil is no problem", fields: []FieldValue{{"Gate", nil, false}}},
		{name: "a required field left nil is required", fields: []FieldValue{{"Status", nil, true}},
			want: []string{"Status is required"}},
		{name: "a typed nil is named with its type, required or not",
			fields: []FieldValue{{"Store", fmt.Stringer(nilPtr), true}, {"Gate", fmt.Stringer(nilPtr), false}},
			want:   []string{"Store holds a nil *struct { input.stringer }", "Gate holds a nil *struct { input.stringer }"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Fields(tt.fields...))
		})
	}
}

func TestNotMadeNamesTheConstructor(t *testing.T) {
	err := NotMade("rollout", "Controller")
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "rollout: invalid Controller: not made by NewController", err.Error())
}

type stringer struct{}

func (stringer) String() string { return "" }

package check

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/converge-dev/converge"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestIsNilSeesTypedNils(t *testing.T) {
	var p *int
	var f func()
	var s fmt.Stringer
	assert.True(t, IsNil(nil))
	assert.True(t, IsNil(p), "a nil pointer")
	assert.True(t, IsNil(f), "a nil func")
	assert.True(t, IsNil(s), "a nil interface")
	assert.False(t, IsNil(3), "a value is never nil")
	assert.False(t, IsNil(new(int)))
}

func TestProblemsFoldsAnEnginesProblems(t *testing.T) {
	assert.Nil(t, Problems(nil, "Engine: "))
	assert.Equal(t, []string{"Engine: a", "Engine: b"}, Problems(fmt.Errorf("w: %w", converge.Invalid("rollout", "policy", "a", "b")), "Engine: "))
	assert.Equal(t, []string{"Pods: boom"}, Problems(errors.New("boom"), "Pods: "))
}

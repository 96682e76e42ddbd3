package rollout

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hostError struct{ code int }

func (e hostError) Error() string { return "host said no" }

func TestConflict(t *testing.T) {
	assert.NoError(t, Conflict(nil))

	err := Conflict(hostError{code: 409})
	require.ErrorIs(t, err, ErrConflict)
	assert.NotErrorIs(t, err, ErrInvalid)
	var he hostError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 409, he.code)
	assert.EqualError(t, err, "rollout: status conflict: host said no")

	wrapped := errors.Join(errors.New("context"), err)
	assert.ErrorIs(t, wrapped, ErrConflict)
}

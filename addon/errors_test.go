package addon_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge/addon"
)

func TestInvalidError(t *testing.T) {
	one := &addon.InvalidError{What: "spec", Problems: []string{"empty name"}}
	assert.Equal(t, "addon: invalid spec: empty name", one.Error())
	two := &addon.InvalidError{What: "table", Problems: []string{"a", "b"}}
	assert.Equal(t, `addon: invalid table: 2 problems: ["a" "b"]`, two.Error())
	assert.ErrorIs(t, two, addon.ErrInvalid)
	assert.NotErrorIs(t, two, addon.ErrConflict)
	var ie *addon.InvalidError
	assert.True(t, errors.As(error(two), &ie))
}

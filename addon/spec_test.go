package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

func TestSpecValidate(t *testing.T) {
	require.NoError(t, addon.Spec{Name: "mesh", Version: "v1"}.Validate())
	err := addon.Spec{Generation: -1}.Validate()
	var ie *addon.InvalidError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, []string{"empty name", "empty version", "negative generation -1"}, ie.Problems)
}

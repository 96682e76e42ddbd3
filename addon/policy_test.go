package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

func TestPolicyExhausted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int
		failures int
		want     bool
	}{
		{"zero value allows 5 retries", 0, 5, false},
		{"zero value: the sixth failure exhausts", 0, 6, true},
		{"unlimited", -1, 1 << 30, false},
		{"one retry", 1, 1, false},
		{"one retry: the second failure exhausts", 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, addon.Policy{MaxRetries: tc.max}.Exhausted(tc.failures))
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, addon.Policy{}.Validate(), "the zero policy is the conservative default")
	require.NoError(t, addon.Policy{MaxRetries: -1, UpgradeRemediation: addon.RemediationUninstall, InstallRemediation: addon.RemediationNone}.Validate())
	err := addon.Policy{MaxRetries: -5, CheckTimeout: -1, UpgradeRemediation: "Pray", Backoff: addon.Backoff{Jitter: 2}}.Validate()
	var ie *addon.InvalidError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Len(t, ie.Problems, 4)
}

func TestNewMachineRejectsBadConfig(t *testing.T) {
	_, err := addon.NewMachine(addon.Config{})
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Contains(t, err.Error(), "nil driver")
}

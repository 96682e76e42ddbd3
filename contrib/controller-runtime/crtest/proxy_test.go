package crtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/testenv"
)

// A manager needs a proxy made by testenv.NewFaultProxy.
func TestNewProxyManagerRefusesAProxyNotMade(t *testing.T) {
	for _, proxy := range []*testenv.FaultProxy{nil, {}} {
		_, err := NewProxyManager(proxy, "instance-1", manager.Options{})
		require.ErrorIs(t, err, converge.ErrInvalid)
		assert.EqualError(t, err, "crtest: invalid NewProxyManager arguments: proxy is not made by testenv.NewFaultProxy")
	}
}

package testenv

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kube-apiserver is linked to report the pinned Kubernetes version in
// both places hack/lib/version.sh sets it, with the build's date.
func TestAPIServerLdflags(t *testing.T) {
	pinned, err := pinnedKubernetes()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", pinned)
	flags, err := apiserverLdflags(buildDate(time.Date(2026, 12, 2, 7, 30, 0, 0, time.FixedZone("CET", 3600))))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(flags, "-s -w "), flags)
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		for _, kv := range []string{"gitVersion=v1.37.2", "gitMajor=1", "gitMinor=37", "gitTreeState=clean", "buildDate=2026-12-02T06:30:00Z"} {
			assert.Contains(t, flags+" ", "-X "+pkg+"."+kv+" ")
		}
	}
	assert.NotContains(t, flags, "gitCommit", "the module proxy does not say the commit")
}

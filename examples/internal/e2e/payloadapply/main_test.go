//go:build !integration

package payloadapply

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/converge-dev/converge/payload/manifest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// loadExample loads the example's manifests and removals.
func loadExample(t *testing.T) (manifests, removals []manifest.Manifest) {
	t.Helper()
	manifests, removals, err := Load(os.DirFS("../../../payload-apply"))
	require.NoError(t, err)
	return manifests, removals
}

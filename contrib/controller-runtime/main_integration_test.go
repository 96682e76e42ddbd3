//go:build integration

package crconverge

import (
	"testing"

	"go.uber.org/goleak"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
)

// env is the etcd and kube-apiserver every integration test of the package
// shares, with the CRDs of testdata installed (Widget, and testapi's
// resources).
var env = &envtest.Environment{CRDDirectoryPaths: []string{"testdata"}, ErrorIfCRDPathMissing: true}

// TestAddonControllerOnTheAPIServer watches Secrets metadata-only
// (AddonOptions.Watches): stopping its manager leaves that watch's filter
// goroutine blocked for good, which nothing outside apimachinery can stop
// (crtest.IgnoreStoppedMetadataWatch says why). Every other goroutine of a
// manager, its informers and reflectors among them, must be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(crtest.WithEnvironment(m, env), crtest.IgnoreStoppedMetadataWatch())
}

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

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(crtest.WithEnvironment(m, env), metadataWatchLeak)
}

// metadataWatchLeak is the goroutine controller-runtime's metadata-only
// informers (AddonOptions.Watches) may leave behind when their manager
// stops with an event in flight: the watch.Filter that fixes up the events'
// kind blocks forever on a send nobody reads (apimachinery's filteredWatch).
var metadataWatchLeak = goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")

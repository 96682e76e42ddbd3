//go:build integration

package crconverge

import (
	"testing"

	"go.uber.org/goleak"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
)

// env is the etcd and kube-apiserver every integration test of the package
// shares, with the Widget CRD of testdata installed.
var env = &envtest.Environment{CRDDirectoryPaths: []string{"testdata"}, ErrorIfCRDPathMissing: true}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(crtest.WithEnvironment(m, env))
}

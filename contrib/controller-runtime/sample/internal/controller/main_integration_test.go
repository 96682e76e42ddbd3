//go:build integration

package controller

import (
	"testing"

	"go.uber.org/goleak"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
)

// env is the etcd and kube-apiserver the package's integration tests share,
// with the sample's generated CRDs installed.
var env = &envtest.Environment{CRDDirectoryPaths: []string{"../../config/crd/bases"}, ErrorIfCRDPathMissing: true}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(crtest.WithEnvironment(m, env))
}

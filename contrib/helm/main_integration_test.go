//go:build integration

package helmconverge_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/converge-dev/converge/testenv"
)

// env is the etcd and kube-apiserver the package's integration tests share.
var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

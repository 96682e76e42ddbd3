// Package testenv starts a real etcd and kube-apiserver on loopback for the
// integration tests, built from source without downloading any binary.
//
// The two binaries are built from the tools module in ./tools (which pins
// k8s.io/kubernetes and the etcd server) into a git-ignored cache keyed by
// that module's go.mod and go.sum, so they are rebuilt only when a version
// changes. CONVERGE_KUBE_APISERVER and CONVERGE_ETCD point at existing
// binaries instead. Test packages that start at once build once: one process
// builds under a file lock and the others wait for it. A build runs in a
// process group of its own and dies with the process that started it, also
// when go test kills that process at its -timeout.
//
// One Environment serves a whole test package:
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
//	}
package testenv

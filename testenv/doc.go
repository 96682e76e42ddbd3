// Package testenv starts a real etcd and kube-apiserver on loopback for
// integration tests, built from source through the Go module proxy: no
// binary is downloaded, so it works where setup-envtest has no download
// site to reach.
//
// One Environment serves a whole test package; its Config (a *rest.Config
// for system:masters) and Kubeconfig (a file, for programs that take
// -kubeconfig) reach the apiserver. This is the whole test of an adopter's
// reconciler, shop.Reconcile, which applies a ConfigMap with kube.Applier
// (testdata/adopter, which TestAdopterModuleRunsTestenvFromTheModuleZip runs
// from a module that requires converge by version):
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
//	}
//
//	func TestReconcileAppliesTheSettings(t *testing.T) {
//		ctx := context.Background()
//		require.NoError(t, shop.Reconcile(ctx, env.Config, "default", "3"))
//		client := kubernetes.NewForConfigOrDie(env.Config)
//		settings, err := client.CoreV1().ConfigMaps("default").Get(ctx, "shop-settings", metav1.GetOptions{})
//		require.NoError(t, err)
//		require.Equal(t, "3", settings.Data["level"])
//	}
//
// The apiserver runs no controllers (no kube-controller-manager, no
// scheduler): a test writes the status a controller would. It authorizes with
// RBAC and enforces OwnerReferencesPermissionEnforcement, as production
// clusters do (see Start).
//
// # Faults
//
// NewFaultProxy puts a reverse proxy between the operator under test and
// the apiserver that injects the faults of a seeded FaultPlan: conflicts,
// throttling, internal errors, writes that time out after they committed,
// latency, closed, delayed and expired (410) watches, stale views, and
// crash points that cut one instance of the operator off between two
// writes. Each instance reaches it with a Config of its own identity;
// checks read a consistent Snapshot. TestReconcileUnderFaults in
// testdata/adopter is an adopter's test under faults.
//
// # The binaries
//
// The first Start builds the two binaries with the go command on $PATH from
// a small build module embedded in this package, which pins k8s.io/kubernetes
// and the etcd server (the go command fetches their sources from the module
// proxy, as for any dependency). The first build compiles Kubernetes and
// takes many minutes; later ones find the binaries in the cache, under
// CacheDir ($CONVERGE_TESTBIN_CACHE, or converge/testbin in the user's cache
// directory) in a directory named by a digest of the build module, so they
// are rebuilt only when a version changes and every checkout and every module
// that requires converge shares them. CONVERGE_KUBE_APISERVER and
// CONVERGE_ETCD point at existing binaries instead. Test packages that start
// at once build once: one process builds under a file lock and the others
// wait for it. A build runs in a process group of its own and dies with the
// process that started it, also when go test kills that process at its
// -timeout; so do etcd and kube-apiserver. kube-apiserver is linked to
// report the Kubernetes version it is built from, as a release build does.
//
// controller-runtime's envtest can run on the same binaries: the
// contrib/controller-runtime module's crtest package fills an
// envtest.Environment from EnsureBinaries.
package testenv

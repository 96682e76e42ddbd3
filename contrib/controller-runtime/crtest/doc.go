// Package crtest holds test helpers for operators built on crconverge, for
// both kinds of test an operator has.
//
// On a real apiserver: Configure, Start and WithEnvironment run
// controller-runtime's envtest on the etcd and kube-apiserver that package
// testenv builds from the module proxy, with nothing to download and no
// binary directory to find:
//
//	var env = &envtest.Environment{CRDDirectoryPaths: []string{"../config/crd/bases"}, ErrorIfCRDPathMissing: true}
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(crtest.WithEnvironment(m, env))
//	}
//
// Tests then reach the apiserver with env.Config. An operator that watches a
// kind metadata-only (crconverge.AddonOptions.Watches) adds
// IgnoreStoppedMetadataWatch to goleak's options: a stopped manager leaves
// such a watch's goroutine behind, which nothing outside apimachinery stops.
//
// Under faults: NewProxyManager builds a manager for one instance of the
// operator on an identity of a testenv.FaultProxy in front of that API
// server, so that its client and its informers meet the proxy's faults and
// a crash point cuts that instance off; the test then stops it and starts
// a fresh instance under a new identity:
//
//	mgr, err := crtest.NewProxyManager(proxy, "instance-1", manager.Options{})
//
// On controller-runtime's fake client: NewManager is a manager that builds
// crconverge's configured controllers (and any other) on the fake client,
// whose Reconcile a test then calls:
//
//	mgr, err := crtest.NewManager(c, events.NewFakeRecorder(100))
//	ctrl, err := crconverge.NewAddonController(mgr, opts)
//	res, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: key})
//
// WithGenerations keeps
// metadata.generation moving as the apiserver does, on every write: Create,
// Update, Patch and server-side apply (client.Apply, and an apply Patch that
// creates the object). The add-on engine acts on generations (it upgrades,
// and leaves Failed for a new spec, only under a new one), the payload
// worker's readiness checks compare a workload's observed generation with the
// generation its applier's server-side apply gave it, and the fake client
// never changes a generation, so without it a test that changes an add-on's
// version sees the change ignored without a word, and a payload worker waits
// for its Deployments for ever:
//
//	c := crtest.WithGenerations(fake.NewClientBuilder().WithScheme(scheme).
//		WithStatusSubresource(&v1alpha1.Addon{}).Build(), &v1alpha1.Addon{})
//
// It is a package of its own, not part of crconverge, so that an operator's
// binary never links envtest and testenv.
package crtest

// Package crconverge adapts the engines' host interfaces to controller-runtime,
// so that an operator built with a controller-runtime manager adopts an engine
// in a few lines.
//
// The status stores keep an engine's Status on a custom resource's status
// subresource (NewObjectStatusStore) or in a ConfigMap
// (NewConfigMapStatusStore) through the manager's client.Client; they are the
// stores of package kube (github.com/converge-dev/converge/kube) on a client
// of this package, with the same optimistic concurrency (and
// kube.LatestStatusWriter makes either the payload worker's StatusWriter).
// In the same way, NewRolloutPods runs rollout's installers as pods and reads
// its operands and nodes, NewAddonObjects is the add-on engine's Store on a
// custom resource, and NewApplier applies a payload's manifests with
// server-side apply, deletes them and checks their readiness: kube's
// RolloutPods, AddonObjects and Applier, with all their rules, on
// client.Client. The manager's client reads pods and nodes from its cache
// (list and watch on both); add-ons and applied objects, read as
// unstructured, come from the API server.
//
// Result turns what an engine returns into what a reconcile.Reconciler
// returns. LeaderElected runs a long-lived worker, such as
// payload.Worker.Start, as a manager.Runnable while the manager holds the
// leader lease.
//
// The add-on engine acts on generations: it upgrades, and leaves Failed for
// a new spec, only when the add-on object's metadata.generation moves (and
// the payload worker reports the generation Worker.Update gave it as its
// status' observedGeneration). The API server
// moves a custom resource's generation on every change of anything but
// metadata and status; controller-runtime's fake client never does, so on
// it a changed spec is ignored without a word. In tests on the fake client,
// wrap it with crtest.WithGenerations (package
// github.com/converge-dev/converge/contrib/controller-runtime/crtest), which
// moves generations as the API server does; crtest also runs envtest on the
// etcd and kube-apiserver of converge's testenv (crtest.WithEnvironment), so
// that the same tests run on a real apiserver.
//
// Events need no adapter of their own: the manager's recorder,
// mgr.GetEventRecorder(name), is a client-go events/v1 recorder, which
// kube.RecordEvents takes as it is:
//
//	kube.RecordEvents(r.Recorder, obj, "Reconcile", res.Events)
package crconverge

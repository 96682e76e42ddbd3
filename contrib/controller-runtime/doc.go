// Package crconverge runs converge's engines in a controller-runtime manager:
// a configured controller per engine, built from options and a custom
// resource type with a few accessors, and beneath them the adapters of the
// engines' host interfaces to controller-runtime's client.
//
// # Configured controllers
//
// NewRolloutController, NewAddonController and NewPayloadController each
// build the whole controller of one engine and register it with the
// manager, in the manner of kubebuilder-declarative-pattern's configured
// reconciler; their options are named after controller-runtime's builder
// (For, Owns, Watches, Name for Named, Options for WithOptions):
//
//	_, err := crconverge.NewAddonController(mgr, crconverge.AddonOptions{
//		For:    &v1alpha1.Addon{},
//		Engine: addon.Config{Driver: driver},
//		Owns:   []client.Object{&corev1.ConfigMap{}},
//	})
//
// The resource's Go type tells the controller where its engine's inputs
// and status are through a small accessor interface, RolloutObject,
// AddonObject or PayloadObject: its spec's policy, the revision, version or release to
// reach, and its status field:
//
//	func (a *Addon) AddonPolicy() addon.Policy  { return a.Spec.Policy }
//	func (a *Addon) AddonVersion() string       { return a.Spec.Version }
//	func (a *Addon) AddonStatus() *addon.Status { return &a.Status }
//
// Every configured controller
//
//   - writes the engine's status to the resource's status subresource over
//     the resource version it read, the first read being the manager's
//     cached copy: a write that lost a race makes the engine read the
//     resource again from the API server (the manager's API reader, never a
//     cache that may lag) and decide again, so nothing it did is lost, and
//     a conflict still left requeues the resource (Result); a status the
//     resource's definition cannot hold (fields its schema drops, no status
//     subresource) is a kube.StatusSchemaError and a Warning event naming
//     the resource and the fields, once per field in a process;
//   - records the engine's events about the resource with the manager's
//     recorder named "<name>-controller";
//   - returns the engine's RequeueAfter (Result), and makes bad input in the
//     resource, such as an invalid policy, a terminal error (the resource
//     waits for a change);
//   - watches its kind and what its engine reads: the rollout controller
//     nodes (each reconciles every rollout) and pods (each reconciles the
//     rollouts whose pods live in its namespace),
//     the add-on controller the kinds it Owns (an object reconciles its
//     controller owner) and Watches (mapped by MapWatched: a Helm release's
//     objects carry no owner reference), the payload controller its one
//     resource.
//
// The rollout controller acts only on the objects it owns, those of
// RolloutOptions.Namespaces that RolloutOptions.Selector selects: its
// watches pass no event of another object and its reconcile checks the
// object again, so another object is never reconciled, written or told
// about, whatever the cache holds. Its pods configuration is the
// controller's, RolloutOptions.Pods, unless the resource's type is a
// RolloutPodsConfigurer, which gives each object its own (its operand,
// installer pod, node selector, namespace or owner); the installers'
// controller owner is the rollout object, so that deleting it deletes
// them, wherever an owner reference can name it (not across namespaces).
// RolloutOptions.Policy lies under each resource's policy: a field the
// resource leaves zero takes the controller's default. The status'
// observedGeneration is the resource's generation it acted on.
//
// The add-on controller keeps a finalizer on the resource until the engine
// reports the add-on uninstalled. The payload controller runs one
// payload.Worker for one resource on the leader (LeaderElected): it carries
// on from the resource's persisted status, is handed each new release, is
// started again on a new policy, and creates the resource when it is
// missing if asked to (the cluster-version operator's ClusterVersion).
//
// Every option has a documented default, and a bad one (a nil manager, a
// nil or typed-nil prototype or host interface, a kind the manager's scheme
// does not know, a field that is the controller's own) is an error matching
// converge.ErrInvalid, never a panic.
//
// # Adapters
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
// unstructured, come from the API server. The configured controllers are
// built on RolloutPods and Applier.
//
// Result turns what an engine returns into what a reconcile.Reconciler
// returns. LeaderElected runs a long-lived worker, such as
// payload.Worker.Start, as a manager.Runnable while the manager holds the
// leader lease.
//
// Events need no adapter of their own: the manager's recorder,
// mgr.GetEventRecorder(name), is a client-go events/v1 recorder, which
// kube.RecordEvents takes as it is:
//
//	kube.RecordEvents(r.Recorder, obj, "Reconcile", res.Events)
//
// # Tests
//
// Package crtest (github.com/converge-dev/converge/contrib/controller-runtime/crtest)
// tests an operator on either client. On controller-runtime's fake client,
// crtest.NewManager builds the configured controllers, so that a test calls
// their Reconcile (and runs the payload worker with the manager's Start).
// The add-on engine acts on generations: it upgrades, and leaves Failed for
// a new spec, only when the add-on object's metadata.generation moves (and
// the payload worker reports the generation Worker.Update gave it as its
// status' observedGeneration). The API server moves a custom resource's
// generation on every change of anything but metadata and status;
// controller-runtime's fake client never does, so on it a changed spec is
// ignored without a word: wrap it with crtest.WithGenerations, which moves
// generations as the API server does. On a real apiserver,
// crtest.WithEnvironment runs envtest on the etcd and kube-apiserver of
// converge's testenv, so that the same tests run there.
package crconverge

// Package kube adapts the engines' host interfaces to client-go, so that
// adopting an engine takes a few lines.
//
// The status stores keep an engine's Status, as JSON, either at a path of a
// custom resource's status subresource (ObjectStatusStore, on the dynamic
// client, for any GroupVersionResource) or under a key of a ConfigMap
// (ConfigMapStatusStore). Both use optimistic concurrency: a write names the
// resource version it read, and a lost race returns the API server's own 409
// (apierrors.IsConflict), which every engine recognises and answers by
// reading again.
//
// RolloutPods (rollout's installers as pods, its operands and nodes),
// AddonObjects (addon.Store on a custom resource, and the finalizer that
// holds a deleted add-on until it is uninstalled) and Applier (payload's
// server-side apply, deletion and readiness) hold every rule themselves and
// reach the cluster through a small seam, PodClient, AddonClient and
// ApplyClient: NewRolloutPods, NewAddonObjects and NewApplier implement them
// on client-go, and NewRolloutPodsFor, NewAddonObjectsFor and NewApplierFor
// take any other client (the controller-runtime module's, for one), as the
// status stores' ...For constructors do.
//
// PDBGate is a rollout.Gate that takes a node down only while every
// PodDisruptionBudget covering the pods its disruption takes down (the
// operand and its guard pod by default) allows it, as the eviction API
// would.
//
// ObjectReady judges any object read from the cluster, of any kind, by its
// status: ready, in progress (ErrNotReady) or failed (ErrObjectFailed);
// Applier.Ready waits on it for payload, and the Helm driver of the
// contrib/helm module for an add-on's release. It follows kstatus (Current,
// InProgress, Failed, from the standard conditions Ready, Reconciling and
// Stalled, observedGeneration, and rules for the built-in kinds), except where
// kube's own rules are stricter, each stated with its reason on ObjectReady
// (a Job must complete, not only start). kube takes kstatus from
// github.com/fluxcd/cli-utils, the fork Flux maintains, rather than from
// sigs.k8s.io/cli-utils: its status package is the same code, but it is the
// copy Helm 4 requires (helm.sh/helm/v4 v4.3.1 requires fluxcd/cli-utils
// v1.2.2), so that in a binary that links both one copy judges readiness for
// kube and Helm alike, and it tracks current Kubernetes releases, where
// sigs.k8s.io/cli-utils' latest release requires Kubernetes 1.30 modules. Only
// kube imports it; the engines judge nothing by themselves.
//
// RecordEvents and RecordLegacyEvents turn any engine's Result.Events into
// Kubernetes events about the object the engine works for, through client-go's
// events/v1 recorder or its older record.EventRecorder.
//
// Each adapter's doc comment states the RBAC it needs; RBAC returns the same
// rules as a ClusterRole manifest to apply.
package kube

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
// AddonObjects (addon.Store on a custom resource) and Applier (payload's
// server-side apply, deletion and readiness) hold every rule themselves and
// reach the cluster through a small seam, PodClient, AddonClient and
// ApplyClient: NewRolloutPods, NewAddonObjects and NewApplier implement them
// on client-go, and NewRolloutPodsFor, NewAddonObjectsFor and NewApplierFor
// take any other client (the controller-runtime module's, for one), as the
// status stores' ...For constructors do.
//
// RecordEvents and RecordLegacyEvents turn any engine's Result.Events into
// Kubernetes events about the object the engine works for, through client-go's
// events/v1 recorder or its older record.EventRecorder.
//
// Each adapter's doc comment states the RBAC it needs; RBAC returns the same
// rules as a ClusterRole manifest to apply.
package kube

// Package crdcheck declares custom resources that embed every engine's
// Policy and Status the way a host's CRD does, so that
// hack/verify-crd-embeddable.sh can check with controller-gen that the
// engines' persisted types make a valid CRD schema without
// allowDangerousTypes. Nothing imports it.
//
// +kubebuilder:object:generate=true
// +groupName=crdcheck.converge.dev
// +versionName=v1alpha1
package crdcheck

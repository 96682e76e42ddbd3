// Package v1alpha1 holds the sample operator's API: one resource per engine,
// each embedding the engine's Policy in its spec and the engine's Status as
// its status.
//
// +kubebuilder:object:generate=true
// +groupName=sample.converge.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the sample's resources.
	GroupVersion = schema.GroupVersion{Group: "sample.converge.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the sample's resources with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the sample's resources to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

package controller

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
)

// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons/status,verbs=get;update
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons/finalizers,verbs=update

// AddonOptions configures the controller that keeps each Addon's version
// installed through driver, behind the finalizer sample.converge.dev/addon,
// and reconciles an Addon again when a ConfigMap it owns changes (the
// ConfigMapDriver's).
func AddonOptions(driver addon.Driver) crconverge.AddonOptions {
	return crconverge.AddonOptions{
		For:    &v1alpha1.Addon{},
		Engine: addon.Config{Driver: driver, Owner: "sample-operator"},
		Owns:   []client.Object{&corev1.ConfigMap{}},
	}
}

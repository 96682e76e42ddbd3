package controller

import (
	"context"
	"io/fs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// +kubebuilder:rbac:groups=sample.converge.dev,resources=payloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=payloads/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// PayloadOptions configures the payload worker of the Payload at key, as the
// cluster-version operator runs one for its ClusterVersion: on the leader
// only, it applies the manifests of the release the Payload names, read
// from releases/<release>/, with server-side apply as "converge-sample"
// (waiting for each object's readiness). The sample's RBAC lets it apply
// ConfigMaps; an operator grants what its payloads hold.
func PayloadOptions(key types.NamespacedName, releases fs.FS) crconverge.PayloadOptions {
	return crconverge.PayloadOptions{
		For:          &v1alpha1.Payload{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		FieldManager: "converge-sample", ForceOwnership: true,
		Engine: payload.Config{Loader: payload.LoaderFunc(func(_ context.Context, desired payload.Release) (*payload.Payload, error) {
			dir, err := fs.Sub(releases, desired.Version)
			if err != nil {
				return nil, err
			}
			manifests, err := manifest.Load(dir, manifest.Options{})
			if err != nil {
				return nil, err
			}
			return &payload.Payload{Release: desired, Manifests: manifests}, nil
		})},
	}
}

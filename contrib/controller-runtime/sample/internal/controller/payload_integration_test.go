//go:build integration

package controller

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/payload"
)

func configMapManifest(ns, name, version string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  namespace: ` + ns + `
  name: ` + name + `
data:
  version: "` + version + `"
`)}
}

// TestPayloadWorkerAppliesTheNamedRelease applies a release, then the next
// one, through the worker under the manager, on the real API server.
func TestPayloadWorkerAppliesTheNamedRelease(t *testing.T) {
	ctx := context.Background()
	c := apiClient(t)
	ns := newNamespace(t, c)
	key := types.NamespacedName{Namespace: ns, Name: "cluster"}
	releases := fstest.MapFS{
		"1.0/0000_10_settings.yaml": configMapManifest(ns, "settings", "1.0"),
		"1.1/0000_10_settings.yaml": configMapManifest(ns, "settings", "1.1"),
		"1.1/0000_20_extra.yaml":    configMapManifest(ns, "extra", "1.1"),
	}
	startManager(t, func(mgr ctrl.Manager) error {
		_, err := crconverge.NewPayloadController(mgr, PayloadOptions(key, releases))
		return err
	})
	p := &v1alpha1.Payload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"}, Spec: v1alpha1.PayloadSpec{Release: "1.0"}}
	require.NoError(t, c.Create(ctx, p))

	applied := func(version string, total int32) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got := &v1alpha1.Payload{}
			if err := c.Get(ctx, key, got); err != nil {
				return false, err
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			st := got.Status
			return st.Release.Version == version && st.Total == total && st.Done == total && st.Completed >= 1 &&
				len(st.History) > 0 && st.History[0].State == payload.UpdateCompleted && cm.Data["version"] == version, nil
		}
	}
	eventually(t, "release 1.0 is applied and the Payload's status says so", applied("1.0", 1))

	require.NoError(t, c.Get(ctx, key, p))
	p.Spec.Release = "1.1"
	require.NoError(t, c.Update(ctx, p))
	eventually(t, "release 1.1 is applied over 1.0", applied("1.1", 2))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extra"}, &corev1.ConfigMap{}))
}

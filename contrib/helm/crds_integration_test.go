//go:build integration

package helmconverge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// TestIntegrationCRDPolicies: on the real apiserver, a chart's CRD is
// created by the default policies (Create on install, Skip on upgrade) and
// left as it is on upgrade though the chart changed it; created by
// CreateReplace and replaced on upgrade by the changed one (established);
// and never installed by Skip, whose release installs all the same.
func TestIntegrationCRDPolicies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	objects, err := dynamic.NewForConfig(env.Config)
	require.NoError(t, err)
	cluster, err := helmconverge.NewCluster(env.Config)
	require.NoError(t, err)
	widgets, err := helmconverge.LoadDir("testdata/widgets")
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		policies     helmconverge.CRDPolicies
		afterInstall string // the CRD's schema label after the install; "" when absent
		afterUpgrade string
	}{
		{name: "Create", afterInstall: "v1", afterUpgrade: "v1"},
		{name: "CreateReplace", policies: helmconverge.CRDPolicies{Install: helmconverge.CRDsCreateReplace, Upgrade: helmconverge.CRDsCreateReplace},
			afterInstall: "v1", afterUpgrade: "v2"},
		{name: "Skip", policies: helmconverge.CRDPolicies{Install: helmconverge.CRDsSkip, Upgrade: helmconverge.CRDsSkip}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each policy has a CRD of its own group and a namespace of its own.
			group := strings.ToLower(tc.name) + ".converge.dev"
			crdName := "widgets." + group
			ns := "crds-" + strings.ToLower(tc.name)
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() {
				err := objects.Resource(crds).Delete(context.Background(), crdName, metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					assert.NoError(t, err)
				}
			})
			charts := map[string]*chart.Chart{
				"v1": withCRD(t, widgets, "example.converge.dev", group),
				"v2": withCRD(t, widgets, "example.converge.dev", group, "schema: v1", "schema: v2"),
			}
			d, err := helmconverge.NewDriver(helmconverge.Config{
				Cluster: cluster,
				Charts: func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
					return helmconverge.Chart{Chart: charts[req.To], CRDs: tc.policies}, nil
				},
			})
			require.NoError(t, err)
			request := func(from, to string) addon.Request {
				return addon.Request{Spec: addon.Spec{Name: ns + "/widgets", Generation: 1, Version: to}, From: from, To: to}
			}
			// label reads the CRD's schema label, "" when there is no CRD,
			// and checks that a CRD there is established.
			label := func(when string) string {
				crd, err := objects.Resource(crds).Get(ctx, crdName, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return ""
				}
				require.NoError(t, err, when)
				assert.True(t, established(t, crd), "%s: the CRD is established", when)
				return crd.GetLabels()["schema"]
			}

			_, err = d.Install(ctx, request("", "v1"))
			require.NoError(t, err)
			assert.Equal(t, tc.afterInstall, label("after the install"))
			_, err = client.CoreV1().Secrets(ns).Get(ctx, "widgets-widgets", metav1.GetOptions{})
			require.NoError(t, err, "the release's templates are installed")

			_, err = d.Upgrade(ctx, request("v1", "v2"))
			require.NoError(t, err)
			assert.Equal(t, tc.afterUpgrade, label("after the upgrade"))
		})
	}
}

// established reports whether crd's Established condition is True.
func established(t *testing.T, crd *unstructured.Unstructured) bool {
	t.Helper()
	conds, _, err := unstructured.NestedSlice(crd.Object, "status", "conditions")
	require.NoError(t, err)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" {
			return m["status"] == "True"
		}
	}
	return false
}

//go:build integration

package kube_test

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/events"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// A payload worker adopted with kube installs a payload on the API server
// (a ConfigMap and a CRD it waits to be established), keeps its status in a
// ConfigMap, and stops cleanly.
func TestPayloadWorkerAdoptedOnTheAPIServer(t *testing.T) {
	bg := context.Background()
	cfg := kube.APIServerConfig()
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	dynamicClient, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	_, err = client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-payload"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	manifests, err := manifest.Load(fstest.MapFS{
		"0000_10_settings.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: kube-payload}\ndata: {level: '1'}\n")},
		"0000_20_crd.yaml": {Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\n" +
			"spec: {group: example.com, scope: Namespaced, names: {plural: gadgets, kind: Gadget}, versions: [{name: v1, served: true, storage: true, " +
			"schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]}\n")},
	}, manifest.Options{})
	require.NoError(t, err)
	loader := payload.LoaderFunc(func(_ context.Context, r payload.Release) (*payload.Payload, error) {
		return &payload.Payload{Release: r, Manifests: manifests}, nil
	})
	recorder := events.NewFakeRecorder(100)

	ctx, stop := context.WithCancel(bg)
	defer stop()
	w, err := adoptPayload(ctx, client, dynamicClient, mapper, loader, recorder, nil, 1, payload.Release{Version: "1.0.0"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()

	store, err := kube.NewConfigMapStatusStore[payload.Status](client.CoreV1(), "kube-payload", "payload-status", "")
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(bg, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		st, _, err := store.GetStatus(ctx)
		return err == nil && st.State == payload.StateReconciling && st.Release.Version == "1.0.0", nil
	}), "the worker installs the payload and persists that it reconciles")
	stop()
	require.NoError(t, <-done, "a clean stop is not a failure")
	settings, err := client.CoreV1().ConfigMaps("kube-payload").Get(bg, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "1", settings.Data["level"])
	st, _, err := store.GetStatus(bg)
	require.NoError(t, err)
	require.Equal(t, st.Total, st.Done, "every manifest done")
}

// adoptPayload is a payload worker adopted with kube, as the README links
// it: the host makes it with the release it wants and that release's
// generation, so that its first apply is of that release and never of one
// the persisted status was applying, starts it once (w.Start) and tells it
// each later release (w.Update).
func adoptPayload(ctx context.Context, client kubernetes.Interface, dynamicClient dynamic.Interface, mapper meta.RESTMapper,
	loader payload.Loader, recorder events.EventRecorder, regarding runtime.Object, generation int64, desired payload.Release) (*payload.Worker, error) {
	applier, err := kube.NewApplier(kube.ApplierConfig{Client: dynamicClient, Mapper: mapper, FieldManager: "my-operator", Force: true})
	if err != nil {
		return nil, err
	}
	store, err := kube.NewConfigMapStatusStore[payload.Status](client.CoreV1(), "kube-payload", "payload-status", "")
	if err != nil {
		return nil, err
	}
	persisted, _, err := store.GetStatus(ctx) // carry on where the last run stopped
	if err != nil {
		return nil, err
	}
	return payload.NewWorker(payload.Config{
		Loader:  loader,
		Applier: applier, Deleter: applier, Readiness: applier,
		Status: persisted, Desired: desired, Generation: generation,
		StatusWriter: kube.LatestStatusWriter[payload.Status]{Store: store},
		OnResult:     func(r converge.Result) { kube.RecordEvents(recorder, regarding, "Apply", r.Events) },
	})
}

// Command mesh installs contrib/helm's test chart with addon.Machine and the
// Helm driver: on the cluster of -kubeconfig (releases stored in Secrets),
// or, without it, on an in-memory cluster (Helm's in-memory storage and
// client-go's dynamic fake), where the program itself writes the status a
// deployment controller would. It installs version 1, upgrades to version
// 2 (more replicas) and prints every step, the add-on's status and the
// release's revisions.
//
//	go run ./examples/mesh                          # in memory
//	go run ./examples/mesh -kubeconfig ~/.kube/config
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/testenv/standin"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mesh:", err)
		os.Exit(1)
	}
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func run(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("mesh", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "install on this cluster (default: an in-memory one)")
	namespace := flags.String("namespace", "default", "the release's namespace")
	if err := flags.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	chart, err := helmconverge.LoadDir(chartDir())
	if err != nil {
		return err
	}
	values := map[string]map[string]any{}
	version := func(v map[string]any) (string, error) {
		s, err := helmconverge.Version(chart, v)
		values[s] = v
		return s, err
	}
	v1, err := version(map[string]any{"replicas": 1, "password": "correct-horse"})
	if err != nil {
		return err
	}
	v2, err := version(map[string]any{"replicas": 2, "password": "correct-horse"})
	if err != nil {
		return err
	}

	// The cluster: a real one, or memory plus a stand-in deployment controller.
	var cluster helmconverge.Cluster
	rollOut := func(context.Context) error { return nil }
	if *kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			return err
		}
		if cluster, err = helmconverge.NewCluster(cfg); err != nil {
			return err
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: *namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else {
		mem := memoryCluster()
		cluster = mem
		rollOut = func(ctx context.Context) error { return standin.RollOutAll(ctx, mem.Objects, *namespace, time.Now()) }
	}

	driver, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: cluster,
		Charts: func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
			v, ok := values[req.To]
			if !ok {
				return helmconverge.Chart{}, fmt.Errorf("no version %s", req.To)
			}
			return helmconverge.Chart{Chart: chart, Values: v}, nil
		},
		Watch: []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}},
	})
	if err != nil {
		return err
	}
	store := &fake.AddonStore{}
	spec := addon.Spec{Name: *namespace + "/mesh", Generation: 1, Version: v1}
	store.Put(addon.Object{Spec: spec})
	m, err := addon.NewMachine(addon.Config{Driver: driver, Store: store, Owner: "example",
		Policy: addon.Policy{CheckInterval: metav1.Duration{Duration: time.Second}}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "watching %v for the release's objects\n", driver.Watches())

	converge := func(want string) error {
		for range 60 {
			obj, err := store.Get(ctx, spec.Name)
			if err != nil {
				return err
			}
			res, err := m.Reconcile(ctx, obj)
			if err != nil {
				return err
			}
			for _, e := range res.Events {
				fmt.Fprintf(out, "  event %s %s: %s\n", e.Type, e.Reason, e.Message)
			}
			if err := rollOut(ctx); err != nil {
				return err
			}
			obj, err = store.Get(ctx, spec.Name)
			if err != nil {
				return err
			}
			if st := obj.Status; st.Phase == addon.PhaseRunning && st.InstalledVersion == want {
				fmt.Fprintf(out, "%s: Running %s at Helm revision %s\n", spec.Name, st.InstalledVersion, st.InstalledRevision)
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(res.RequeueAfter, time.Second)):
			}
		}
		return fmt.Errorf("%s did not reach Running %s", spec.Name, want)
	}
	fmt.Fprintf(out, "install %s\n", v1)
	if err := converge(v1); err != nil {
		return err
	}
	if _, ok := store.Update(spec.Name, func(s *addon.Spec) { s.Generation, s.Version = 2, v2 }); !ok {
		return fmt.Errorf("%s is gone", spec.Name)
	}
	fmt.Fprintf(out, "upgrade to %s\n", v2)
	if err := converge(v2); err != nil {
		return err
	}
	return history(out, cluster, *namespace)
}

// history prints the release's revisions as helm history does.
func history(out io.Writer, cluster helmconverge.Cluster, namespace string) error {
	cfg, err := cluster.Helm(namespace, namespace, nil)
	if err != nil {
		return err
	}
	revs, err := action.NewHistory(cfg).Run("mesh")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "REVISION  STATUS      DESCRIPTION")
	for _, r := range revs {
		if rel, ok := r.(*release.Release); ok {
			fmt.Fprintf(out, "%-9d %-11s %s\n", rel.Version, rel.Info.Status, rel.Info.Description)
		}
	}
	return nil
}

// chartDir is contrib/helm's testdata/mesh, found from this file.
func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "mesh")
}

func memoryCluster() *helmconverge.MemoryCluster {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "Pod"}} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	objects := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{
		deployments: "DeploymentList", {Version: "v1", Resource: "secrets"}: "SecretList", {Version: "v1", Resource: "pods"}: "PodList",
	})
	return helmconverge.NewMemoryCluster(objects, mapper)
}

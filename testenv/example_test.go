package testenv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/converge-dev/converge/testenv"
)

// Binaries built or downloaded elsewhere are used as they are when
// CONVERGE_KUBE_APISERVER and CONVERGE_ETCD name them; nothing is built.
func ExampleEnsureBinaries() {
	dir, err := os.MkdirTemp("", "binaries")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	for _, v := range []struct{ env, name string }{{testenv.EnvKubeAPIServer, "kube-apiserver"}, {testenv.EnvEtcd, "etcd"}} {
		path := filepath.Join(dir, v.name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			fmt.Println(err)
			return
		}
		defer restoreEnv(v.env)()
		os.Setenv(v.env, path)
	}

	bins, err := testenv.EnsureBinaries(context.Background())
	fmt.Println(err)
	fmt.Println(bins.KubeAPIServer == filepath.Join(dir, "kube-apiserver"), bins.Etcd == filepath.Join(dir, "etcd"))
	// Output:
	// <nil>
	// true true
}

// restoreEnv returns a function that sets the environment variable name back
// to what it is now.
func restoreEnv(name string) func() {
	old, had := os.LookupEnv(name)
	return func() {
		if had {
			os.Setenv(name, old)
		} else {
			os.Unsetenv(name)
		}
	}
}

// Start runs etcd and kube-apiserver until Stop; a test package shares one
// (WithEnvironment). Not run by go test: the first Start builds
// kube-apiserver, which takes many minutes.
func ExampleStart() {
	ctx := context.Background()
	env, err := testenv.Start(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Stop()
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		fmt.Println(err)
		return
	}
	namespaces, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ns := range namespaces.Items {
		fmt.Println(ns.Name) // default, kube-node-lease, kube-public, kube-system
	}
	fmt.Println("kubectl --kubeconfig", env.Kubeconfig, "get namespaces")
}

package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/converge-dev/converge"
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

// A plan's mistakes are named, each with the fault it is in, before any
// proxy starts.
func ExampleFaultPlan_Validate() {
	plan := testenv.FaultPlan{Seed: 1, Faults: []testenv.Fault{
		{Class: testenv.Conflict, Verbs: []string{"update"}, Resources: []string{"configmaps"}, Percent: 20},
		{Class: testenv.StaleView, Verbs: []string{"list"}, Percent: 10},
		{Class: testenv.Conflict, Verbs: []string{"get"}, Percent: 150},
	}}
	err := plan.Validate()
	fmt.Println(errors.Is(err, converge.ErrInvalid))
	for _, problem := range strings.Split(err.Error(), "; ") {
		fmt.Println(problem)
	}
	// Output:
	// true
	// testenv: invalid fault plan: faults[1]: StaleView needs one of Lag and LagEvents
	// faults[2]: Percent 150 is not in 1..100
	// faults[2]: Conflict does not apply to verb "get" (only to update, patch, delete)
}

// The fault classes, a closed list.
func ExampleFaultClasses() {
	fmt.Println(testenv.FaultClasses())
	// Output:
	// [Conflict TooManyRequests InternalError TimeoutAfterCommit Latency WatchClose WatchDelay WatchGone StaleView Crash]
}

// A campaign of seeded schedules of an operator: each schedule gets a
// proxy of its own, crashes the first instance after a write the seed
// picks, starts a fresh one, and checks the world on a snapshot. Not run
// by go test: it needs kube-apiserver.
func ExampleNewFaultProxy() {
	ctx := context.Background()
	env, err := testenv.Start(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Stop()
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for seed := uint64(1); seed <= 100; seed++ {
		proxy, err := testenv.NewFaultProxy(env.Config, testenv.FaultPlan{Seed: seed, Faults: []testenv.Fault{
			{Class: testenv.Conflict, Percent: 10},
			{Class: testenv.TimeoutAfterCommit, Percent: 5},
			{Class: testenv.WatchClose, Percent: 10, Events: 5},
			{Class: testenv.StaleView, Verbs: []string{"watch"}, Percent: 20, Lag: time.Second},
		}})
		if err != nil {
			fmt.Println(err)
			return
		}
		proxy.CrashAfter("operator-1", 1+int(seed%5))
		// Run the operator on proxy.Config("operator-1") until
		// <-proxy.Crashed("operator-1"), stop it, run a fresh one on
		// proxy.Config("operator-2"), then check:
		snap, err := proxy.Snapshot(ctx, "default", configMaps)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("seed %d: %v\n%s", seed, proxy.Counts(), snap)
		_ = proxy.Close()
	}
}

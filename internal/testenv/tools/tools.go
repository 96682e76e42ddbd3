//go:build tools

// Package tools pins the versions of the kube-apiserver and etcd that the
// integration tests build from source; see ../binaries.go.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)

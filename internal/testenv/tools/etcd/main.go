// Command etcd is etcd's own main, built from the etcd server module that
// k8s.io/kubernetes requires, for the integration test environment.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

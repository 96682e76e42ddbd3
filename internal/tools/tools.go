//go:build tools

// Package tools pins the code generators that hack/update-codegen.sh and
// hack/verify-*.sh build and run. It is a module of its own, so the root
// go.mod never requires them.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)

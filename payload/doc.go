// Package payload applies a payload of manifests as a dependency graph of tasks, inside a
// sync worker that initializes, updates and reconciles, as OpenShift's cluster-version
// operator does.
package payload

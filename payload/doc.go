// Package payload applies a payload of manifests as a dependency graph of tasks, inside a sync worker.
package payload

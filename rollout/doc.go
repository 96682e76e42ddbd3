// Package rollout moves every node of a per-node component to the latest revision, one budgeted node at a time.
package rollout

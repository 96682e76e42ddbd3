// Package rollout moves every node of a per-node component to the latest revision, never more nodes down than allowed.
package rollout

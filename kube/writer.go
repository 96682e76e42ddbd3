package kube

import (
	"context"

	"github.com/converge-dev/converge/internal/input"
)

// StatusReadWriter is the shape of this package's status stores (and of
// rollout.StatusStore): read a status with its resource version, write one
// over a version.
type StatusReadWriter[T any] interface {
	// GetStatus returns the status and the resource version it is at.
	GetStatus(ctx context.Context) (T, string, error)
	// UpdateStatus writes st if the status is still at resourceVersion and
	// returns the new version; a lost race is the API server's 409.
	UpdateStatus(ctx context.Context, st T, resourceVersion string) (string, error)
}

// LatestStatusWriter persists each status it is given over whatever version
// is current: the writer of an engine that is the only writer of its status
// and always holds the whole of it (payload.StatusWriter). A write that
// races another writer returns the 409, which the engine answers by writing
// again. fake.TestPayloadStatusWriter checks that contract.
//
// RBAC: what its Store needs.
type LatestStatusWriter[T any] struct {
	// Store reads the current version and writes the status.
	Store StatusReadWriter[T]
}

// WriteStatus reads the current resource version and writes st over it.
func (w LatestStatusWriter[T]) WriteStatus(ctx context.Context, st T) error {
	if input.IsNil(w.Store) {
		return input.Invalidf("kube", "LatestStatusWriter", "no Store")
	}
	_, rv, err := w.Store.GetStatus(ctx)
	if err != nil {
		return err
	}
	_, err = w.Store.UpdateStatus(ctx, st, rv)
	return err
}

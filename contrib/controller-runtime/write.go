package crconverge

import "context"

// StatusStore reads an engine's status with the resource version it is at,
// and writes it at a resource version: kube.ObjectStatusStore and
// kube.ConfigMapStatusStore, as NewObjectStatusStore and
// NewConfigMapStatusStore return them.
type StatusStore[T any] interface {
	// GetStatus returns the status and its resource version.
	GetStatus(ctx context.Context) (T, string, error)
	// UpdateStatus writes st if the status is still at resourceVersion, and
	// returns the new resource version.
	UpdateStatus(ctx context.Context, st T, resourceVersion string) (string, error)
}

// WriteLatest returns a function that writes a whole status over whatever
// store holds, for an engine that is the only writer of its status and
// keeps it whole in memory, such as the payload worker:
//
//	payload.StatusWriterFunc(crconverge.WriteLatest(store))
//
// It reads the resource version and writes at it, so the API server's 409
// means that another write came between the two; the engine then writes
// again.
func WriteLatest[T any](store StatusStore[T]) func(ctx context.Context, st T) error {
	return func(ctx context.Context, st T) error {
		_, rv, err := store.GetStatus(ctx)
		if err != nil {
			return err
		}
		_, err = store.UpdateStatus(ctx, st, rv)
		return err
	}
}

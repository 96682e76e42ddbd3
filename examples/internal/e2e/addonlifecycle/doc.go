// Package addonlifecycle is the cluster of examples/addon-lifecycle: the
// add-on's driver, the Addon CRD, the in-memory story, the fleet scenario
// on a real cluster, the work queue that runs the example's reconcile, and
// the simulated deployment controller.
package addonlifecycle

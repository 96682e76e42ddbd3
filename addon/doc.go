// Package addon runs an add-on's lifecycle as a phase transition table with a retry and remediation policy.
//
// The engine acts on generations: a changed spec is news only under a new
// Spec.Generation, the add-on object's metadata.generation, which the API
// server moves on every change of anything but metadata and status. An
// upgrade to a new version, and leaving Failed for a new spec, happen when
// the generation moves; a spec read under the generation already observed
// is taken for the spec already acted on, and one under an older generation
// is a stale cache, ignored with a StaleGeneration warning event. A host
// whose objects do not come from an API server must move the generation
// itself: controller-runtime's fake client never does, and the
// controller-runtime module's crtest.WithGenerations makes it.
package addon

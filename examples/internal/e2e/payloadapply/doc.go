// Package payloadapply is what examples/payload-apply needs around the payload engine
// and package kube that is no part of adopting them: the in-memory cluster (client-go's
// fakes, one flaky ConfigMap, a fake clock), the connection to a real cluster, the
// policy, the simulated job and deployment controllers, the checks of the command
// line's values, leader election, the progress line and the wait for one reconcile
// pass.
package payloadapply

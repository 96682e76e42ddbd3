// Package helmconverge is an addon.Driver on Helm 4's SDK, so that the addon
// engine and Helm make an embeddable helm-controller: each add-on is one
// Helm release, installed, upgraded, tested, rolled back, checked for drift
// and uninstalled by Helm's action package under the engine's rules
// (retries, remediation, deadlines, claims, status).
//
// The host gives three things (Config): where the releases live (a
// Cluster: NewCluster on a rest.Config stores them in Secrets, as the helm
// command does; NewMemoryCluster keeps them in memory for tests), which
// release an add-on is (a Release: ReleaseFromName by default, add-on
// "ns/name" is release name in ns; its records may be kept in a storage
// namespace apart), and the chart and values of each add-on version (a
// ChartFunc), with the add-on's own settings beside them on the Chart:
// drift ignore rules, CRD policies for install and upgrade, whether an
// install creates the namespace, and post-renderers, as Flux's
// helm-controller's HelmRelease sets them. Charts come from a directory (LoadDir), a packaged archive
// (LoadArchive) or an fs.FS such as an embed.FS (LoadFS); pulling a chart
// from an OCI registry or an HTTP repository, with its credentials, is the
// host's business, done before the function returns. The add-on's version
// must name both the chart and the values, so that a values change is an
// upgrade: Version computes "<chart version>+values.<digest>".
//
// The engine stays the source of truth for decisions; Helm's own history is
// where revisions live. Install and Upgrade return the Helm revision they
// made and the engine records it with the attempt and with the version it
// carries (addon.Status.InstalledRevision, LastGoodRevision); a rollback to
// the last good version goes back to that very revision (or, when Helm
// pruned it, to the newest revision that carried the version: every
// revision the driver makes is labelled with a digest of its version).
//
// Nothing blocks inside a Reconcile beyond the chart's hooks: install and
// upgrade run without Helm's --wait, and readiness comes from Health, which
// reads each object of the deployed revision from the cluster and judges it
// by its status (rolled-out workloads, complete Jobs, established CRDs, a
// True Ready condition), so the engine's check deadlines and RequeueAfter do
// the waiting. A release left pending-install, pending-upgrade or
// pending-rollback by a crash is reported by Health (ErrReleasePending) and
// unlocked by the next action, which then goes on: no add-on wedges on
// "another operation (install/upgrade/rollback) is in progress".
//
// Each revision the driver writes carries the fencing token of the
// engine's claim it ran under (addon.Request.Fence, the release label
// converge.dev/fence), and a call whose token is older than the latest
// revision's writes nothing and fails with ErrFenced: a replica that paused
// past its claim and resumed cannot overwrite what the replica that took
// over applied. Inspect (addon.Inspector) reports the version of the newest
// deployed revision, which the engine asks after a takeover.
//
// Drift is detected as Flux's helm-controller detects it: a server-side
// dry-run apply of every object of the deployed revision, as Helm's field
// manager, compared with the object in the cluster; the detail names the
// objects and fields, never their values. The engine's Policy.Drift says
// what follows: a Warn, or a correction by a re-apply of the installed
// version. Fields the add-on's Chart.DriftIgnore rules name are no drift.
//
// Values may hold secrets. They go to Helm's release storage and to the
// objects the chart renders, never to the add-on's status, events or logs:
// the engine redacts Helm's errors (addon.Config.Redact), and the driver
// passes Helm's own log records to the context's logger with their text
// redacted (Config.Redact) and their structured values omitted.
//
// Helm sets no owner references: a host that wants to reconcile an add-on
// when one of its objects changes watches the kinds it lists in
// Config.Watch (Driver.Watches) and maps an object to its release with
// ReleaseOf.
package helmconverge

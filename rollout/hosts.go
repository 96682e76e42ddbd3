package rollout

import "context"

// StatusStore reads and writes the rollout status with optimistic
// concurrency.
type StatusStore interface {
	// GetStatus reads the persisted status and its resource version.
	GetStatus(ctx context.Context) (st Status, resourceVersion string, err error)
	// UpdateStatus writes st if the resource version is still
	// resourceVersion and returns the new version. A lost race returns the
	// apiserver's 409 Conflict unchanged or an error marked with
	// converge.Conflict.
	UpdateStatus(ctx context.Context, st Status, resourceVersion string) (newResourceVersion string, err error)
}

// InstallerClient reads, creates and deletes installer pods.
type InstallerClient interface {
	// GetInstaller returns the installer's state, Phase InstallerNotFound when it does not exist.
	GetInstaller(ctx context.Context, inst Installer) (InstallerState, error)
	// EnsureInstaller creates the installer unless it exists.
	EnsureInstaller(ctx context.Context, inst Installer) error
	// DeleteInstaller deletes the installer and returns nil only once it is
	// gone or can no longer run (a pod deleted with no grace period); a
	// missing installer is not an error. Until it returns nil the
	// installer stays in Status.InstallersToDelete and is deleted again on
	// later syncs.
	DeleteInstaller(ctx context.Context, inst Installer) error
}

// OperandReader reads a node's operand pod.
type OperandReader interface {
	// GetOperand returns the operand's state, Phase OperandNotFound when it does not exist.
	GetOperand(ctx context.Context, node string) (OperandState, error)
}

// OperandReaderFunc adapts a function to OperandReader.
type OperandReaderFunc func(ctx context.Context, node string) (OperandState, error)

// GetOperand calls f.
func (f OperandReaderFunc) GetOperand(ctx context.Context, node string) (OperandState, error) {
	return f(ctx, node)
}

// OperandBatchReader reads the operand pods of many nodes in one call, so
// that a sync's host calls do not grow with the node count. A
// Config.Operands that implements it is asked once a sync instead of once a
// node (package kube's RolloutPods does, from its pod lister).
type OperandBatchReader interface {
	OperandReader
	// GetOperands sets operands[i] to the state of nodes[i]'s operand,
	// Phase OperandNotFound where there is none; both slices have the same
	// length.
	GetOperands(ctx context.Context, nodes []string, operands []OperandState) error
}

// Node is a node the rollout covers, as a NodeLister reports it.
type Node struct {
	// Name is the node's name.
	Name string
	// UID is the node object's UID, which tells a machine replaced under
	// the same name from its predecessor ("" when unknown).
	UID string
	// Unreachable is true when the node is not Ready.
	Unreachable bool
}

// NodeLister lists the nodes the rollout covers (a host serves it from its
// node informer). A node it no longer lists has left: its status is
// dropped and its unfinished installer deleted; list a node that is
// unreachable but may come back as Unreachable.
type NodeLister interface {
	ListNodes(ctx context.Context) ([]Node, error)
}

// NodeListerFunc adapts a function to NodeLister.
type NodeListerFunc func(ctx context.Context) ([]Node, error)

// ListNodes calls f.
func (f NodeListerFunc) ListNodes(ctx context.Context) ([]Node, error) { return f(ctx) }

// Gate is asked before the engine takes a node down. Before a decision
// starts a node (gives it a target revision: a new revision, a retry, the
// reinstall of a regressed or missing operand), Controller.Sync asks the
// gate whether the disruption may happen now, one start at a time. nil
// admits the node; any error holds it, whether the gate denied it or could
// not answer (fail safe): Progressing explains the hold at once, with the
// error's text, and Degraded once it is older than Policy.HoldDegradedAfter.
// A node already in transition is asked again before its next installer
// only while it is up (a retry of a failed installer, or a newer revision
// superseding its target, while its operand still runs ready); a node
// already down (installing, its operand not ready, a fallback) is not. An
// etcd host asks whether a quorum of members stays up without the member
// and those already down; another host asks its own disruption budget.
type Gate interface {
	Admit(ctx context.Context, d Disruption) error
}

// GateFunc adapts a function to Gate.
type GateFunc func(ctx context.Context, d Disruption) error

// Admit calls f.
func (f GateFunc) Admit(ctx context.Context, d Disruption) error { return f(ctx, d) }

// Disruption is a start a Gate is asked about.
type Disruption struct {
	// Installer is the installer the start would create, which takes its
	// node down.
	Installer Installer
	// Down names, sorted, the other nodes the rollout counts as
	// unavailable (see Policy.MaxUnavailable), the starts admitted before
	// this one in the same sync included: what is down with it.
	Down []string
}

var (
	_ OperandReader = OperandReaderFunc(nil)
	_ NodeLister    = NodeListerFunc(nil)
	_ Gate          = GateFunc(nil)
)

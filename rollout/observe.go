package rollout

import "time"

// OperandPhase is the observed state of a node's operand (static) pod.
type OperandPhase string

const (
	// OperandNotFound means there is no operand pod; the empty phase means the same.
	OperandNotFound OperandPhase = "NotFound"
	// OperandPending means the operand pod exists but is not ready.
	OperandPending OperandPhase = "Pending"
	// OperandReady means the operand pod is running and ready.
	OperandReady OperandPhase = "Ready"
	// OperandFailed means the operand pod failed.
	OperandFailed OperandPhase = "Failed"
)

// InstallerPhase is the observed state of an installer pod.
type InstallerPhase string

const (
	// InstallerNotFound means the installer pod does not exist; the empty phase means the same.
	InstallerNotFound InstallerPhase = "NotFound"
	// InstallerPending means the installer pod is not running yet.
	InstallerPending InstallerPhase = "Pending"
	// InstallerRunning means the installer pod is running.
	InstallerRunning InstallerPhase = "Running"
	// InstallerSucceeded means the installer pod finished successfully.
	InstallerSucceeded InstallerPhase = "Succeeded"
	// InstallerFailed means the installer pod failed.
	InstallerFailed InstallerPhase = "Failed"
)

// OperandState is what the host observed about a node's operand pod.
type OperandState struct {
	// Phase is the operand's state; empty means OperandNotFound.
	Phase OperandPhase
	// Revision is the revision the operand pod runs (its revision label).
	Revision int32
	// Message is the pod's status message, used when it failed.
	Message string
	// ReadySince is when the pod became ready (its Ready condition's transition time).
	ReadySince time.Time
}

// ContainerTermination is how one installer container ended.
type ContainerTermination struct {
	// Name is the container name.
	Name string
	// Message is the container's termination message.
	Message string
	// OOMKilled is true when the container was killed for running out of memory.
	OOMKilled bool
}

// InstallerState is what the host observed about the installer pod named
// InstallerName(node status) for a node in transition.
type InstallerState struct {
	// Phase is the installer's state; empty means InstallerNotFound.
	Phase InstallerPhase
	// Message is the pod's status message.
	Message string
	// Containers lists terminated containers, in pod order.
	Containers []ContainerTermination
	// StartTime is when the pod started (zero when unknown).
	StartTime time.Time
}

// NodeObservation is what the host observed about one node during a sync.
// The zero value means: no operand, no installer, node reachable.
type NodeObservation struct {
	// Operand is the node's operand pod.
	Operand OperandState
	// Installer is the installer for the node's current target and attempt
	// (InstallerName of its status).
	Installer InstallerState
	// Unreachable is true when the node itself is not Ready. An unreachable
	// node is never started and gets no installer, and it counts as
	// unavailable against MaxUnavailable.
	Unreachable bool
}

// Observation maps the name of every node the rollout covers to what the
// host observed about it. It is the node list: a node in the status but not
// in the observation has left the cluster (its status is dropped and its
// unfinished installer is deleted); an observed node missing from the status
// joins it with no revision. An empty observation of a status with nodes is
// invalid (a cache that has not synced must not wipe the rollout).
type Observation map[string]NodeObservation

func (p OperandPhase) normal() OperandPhase {
	if p == "" {
		return OperandNotFound
	}
	return p
}

func (p InstallerPhase) normal() InstallerPhase {
	if p == "" {
		return InstallerNotFound
	}
	return p
}

// Validate reports an unknown operand or installer phase or a negative revision, wrapped in ErrInvalid.
func (o NodeObservation) Validate() error {
	switch o.Operand.Phase.normal() {
	case OperandNotFound, OperandPending, OperandReady, OperandFailed:
	default:
		return invalidf("unknown operand phase %q", o.Operand.Phase)
	}
	if o.Operand.Revision < 0 {
		return invalidf("negative operand revision %d", o.Operand.Revision)
	}
	switch o.Installer.Phase.normal() {
	case InstallerNotFound, InstallerPending, InstallerRunning, InstallerSucceeded, InstallerFailed:
	default:
		return invalidf("unknown installer phase %q", o.Installer.Phase)
	}
	return nil
}

func (o NodeObservation) operandReady() bool {
	return o.Operand.Phase.normal() == OperandReady
}

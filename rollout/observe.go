package rollout

import (
	"strconv"
	"time"

	"github.com/converge-dev/converge/internal/input"
)

// OperandPhase is the observed state of a node's operand (static) pod. The
// zero value is OperandNotFound. Phases are small integers so that an
// Observation of many nodes keeps its values inline.
type OperandPhase uint8

const (
	// OperandNotFound means there is no operand pod.
	OperandNotFound OperandPhase = iota
	// OperandPending means the operand pod exists but is not ready.
	OperandPending
	// OperandReady means the operand pod is running and ready.
	OperandReady
	// OperandFailed means the operand pod failed.
	OperandFailed
)

// String returns the phase's name: "NotFound", "Pending", "Ready" or "Failed".
func (p OperandPhase) String() string {
	switch p {
	case OperandNotFound:
		return "NotFound"
	case OperandPending:
		return "Pending"
	case OperandReady:
		return "Ready"
	case OperandFailed:
		return "Failed"
	}
	return "OperandPhase(" + strconv.Itoa(int(p)) + ")"
}

// InstallerPhase is the observed state of an installer pod. The zero value
// is InstallerNotFound.
type InstallerPhase uint8

const (
	// InstallerNotFound means the installer pod does not exist.
	InstallerNotFound InstallerPhase = iota
	// InstallerPending means the installer pod is not running yet.
	InstallerPending
	// InstallerRunning means the installer pod is running.
	InstallerRunning
	// InstallerSucceeded means the installer pod finished successfully.
	InstallerSucceeded
	// InstallerFailed means the installer pod failed.
	InstallerFailed
)

// String returns the phase's name: "NotFound", "Pending", "Running",
// "Succeeded" or "Failed".
func (p InstallerPhase) String() string {
	switch p {
	case InstallerNotFound:
		return "NotFound"
	case InstallerPending:
		return "Pending"
	case InstallerRunning:
		return "Running"
	case InstallerSucceeded:
		return "Succeeded"
	case InstallerFailed:
		return "Failed"
	}
	return "InstallerPhase(" + strconv.Itoa(int(p)) + ")"
}

// OperandState is what the host observed about a node's operand pod.
type OperandState struct {
	// Phase is the operand's state.
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
	// Phase is the installer's state.
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

// validate reports an unknown operand or installer phase or a negative
// revision of the named node as an error matching converge.ErrInvalid.
func (o NodeObservation) validate(node string) error {
	switch {
	case o.Operand.Phase > OperandFailed:
		return input.Invalidf("rollout", "observation", "node %q: unknown operand phase %v", node, o.Operand.Phase)
	case o.Operand.Revision < 0:
		return input.Invalidf("rollout", "observation", "node %q: negative operand revision %d", node, o.Operand.Revision)
	case o.Installer.Phase > InstallerFailed:
		return input.Invalidf("rollout", "observation", "node %q: unknown installer phase %v", node, o.Installer.Phase)
	}
	return nil
}

func (o NodeObservation) operandReady() bool {
	return o.Operand.Phase == OperandReady
}

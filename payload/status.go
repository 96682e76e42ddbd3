package payload

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/internal/input"
)

// State is what the worker is doing with a payload; appliers receive it with every manifest.
type State string

const (
	// StateInitializing creates a payload on a fresh cluster: every component at once.
	StateInitializing State = "Initializing"
	// StateUpdating moves the cluster to a new payload, in run-level order, waiting for
	// every manifest to be ready before the next run level.
	StateUpdating State = "Updating"
	// StateReconciling re-applies the payload the cluster already runs, to undo drift.
	StateReconciling State = "Reconciling"
)

// known reports whether s is one of the states, or empty.
func (s State) known() bool {
	switch s {
	case "", StateInitializing, StateUpdating, StateReconciling:
		return true
	}
	return false
}

// Release identifies a payload: the version it carries and where it comes from.
// +kubebuilder:object:generate=true
type Release struct {
	// Version is the payload's version, e.g. "4.15.0".
	// +optional
	Version string `json:"version,omitempty"`
	// Image is where the payload is retrieved from, e.g. an image pull spec or a URL.
	// +optional
	Image string `json:"image,omitempty"`
	// Force, on a desired release, skips the preconditions that would block the update
	// to it (Config.Preconditions). It is not part of the release's identity.
	// +optional
	Force bool `json:"force,omitempty"`
}

// IsZero reports whether the release names nothing.
func (r Release) IsZero() bool { return r.Version == "" && r.Image == "" }

// String prints the release as its version, or its image when it has no version.
func (r Release) String() string {
	if r.Version != "" {
		return r.Version
	}
	return r.Image
}

// Same reports whether r and o are the same release, as the cluster-version operator
// decides: two images pulled by digest ("…@sha256:…") are the same when their digests
// are, whatever registry serves them (a mirror serves the same release); other images
// must be equal. Versions must be equal when both are set. Force is not compared.
func (r Release) Same(o Release) bool {
	if r.Version != "" && o.Version != "" && r.Version != o.Version {
		return false
	}
	if r.Image == "" && o.Image == "" {
		return r.Version == o.Version
	}
	if a, b := digestOf(r.Image), digestOf(o.Image); a != "" && b != "" {
		return a == b
	}
	return r.Image == o.Image
}

// digestOf returns the digest of an image pulled by digest, "" otherwise.
func digestOf(image string) string {
	_, digest, ok := strings.Cut(image, "@")
	if !ok || !strings.Contains(digest, ":") {
		return ""
	}
	return digest
}

// Failure is the summarized error of the last apply, as plain data.
// +kubebuilder:object:generate=true
type Failure struct {
	// Reason classifies the failure, e.g. "UpdatePayloadResourceNotFound" or "MultipleErrors".
	Reason string `json:"reason"`
	// Message is for humans: it names what failed and why.
	Message string `json:"message"`
	// Effect is how much the failure weighs on the update.
	Effect Effect `json:"effect"`
}

// failureOf describes err, nil for a nil err. An *UpdateError gives its reason and
// effect; any other error has reason ReasonUpdatePayloadFailed and effect Fail.
func failureOf(err error) *Failure {
	if err == nil {
		return nil
	}
	f := &Failure{Reason: ReasonUpdatePayloadFailed, Message: boundMessage(err.Error()), Effect: EffectFail}
	if uErr := asUpdateError(err); uErr != nil {
		if uErr.Reason != "" {
			f.Reason = uErr.Reason
		}
		f.Effect = orDefault(uErr.Effect, EffectFail)
	}
	return f
}

// UpdateState says whether an update in Status.History completed.
type UpdateState string

const (
	// UpdateCompleted is an update that applied every manifest once.
	UpdateCompleted UpdateState = "Completed"
	// UpdatePartial is an update in progress, or one left for another release.
	UpdatePartial UpdateState = "Partial"
)

// UpdateHistory is one release the worker moved to.
// +kubebuilder:object:generate=true
type UpdateHistory struct {
	// State is Completed once every manifest was applied, Partial before.
	State UpdateState `json:"state"`
	// StartedTime is when the worker started on the release.
	StartedTime metav1.Time `json:"startedTime"`
	// CompletionTime is when the release completed, or was left for another one.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Version is the release's version.
	// +optional
	Version string `json:"version,omitempty"`
	// Image is the release's image.
	// +optional
	Image string `json:"image,omitempty"`
}

// Status is the progress of a Worker. It is plain data that a host can embed in its
// custom resource's status, persist, and hand back to a new Worker (Config.Status),
// which carries on from it exactly as the worker that wrote it would have.
// +kubebuilder:object:generate=true
type Status struct {
	// ObservedGeneration is the generation of the desired release (Worker.Update).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Release is the release the worker applies.
	// +optional
	Release Release `json:"release,omitempty"`
	// State is what the worker does with Release; empty before the first release.
	// +optional
	State State `json:"state,omitempty"`
	// Done is the number of manifests of Release applied: the most any apply of the
	// release reached, so it never goes backwards within a release.
	// +optional
	Done int32 `json:"done,omitempty"`
	// Total is the number of manifests of Release that belong to the cluster.
	// +optional
	Total int32 `json:"total,omitempty"`
	// Completed counts the applies of Release that succeeded in a row.
	// +optional
	Completed int32 `json:"completed,omitempty"`
	// Failures counts the applies of Release that failed in a row; it spaces retries.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// Interrupted is true when the last apply was stopped before it ended (the worker
	// was stopped or the release replaced); the next apply starts at once.
	// +optional
	Interrupted bool `json:"interrupted,omitempty"`
	// Failure is the summarized error of the last apply that ended, nil when it
	// succeeded without errors.
	// +optional
	Failure *Failure `json:"failure,omitempty"`
	// LastProgressTime is when Done last grew or an apply last completed.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`
	// NextApplyTime is when the next apply of Release is due (the reconcile interval or
	// the retry delay), rounded up to the microsecond, so that an interval below a
	// second is kept as it is; it survives restarts, which neither extend nor shorten
	// it. It reads back written with seconds too, as metav1.Time writes a time.
	// +optional
	NextApplyTime *converge.MicroTime `json:"nextApplyTime,omitempty"`
	// History lists the releases the worker moved to, newest first, at most
	// Policy.MaxHistory.
	// +optional
	// +listType=atomic
	History []UpdateHistory `json:"history,omitempty"`
	// Holds say what keeps a desired release from starting: the pause
	// (converge.HoldPaused) and closed maintenance windows
	// (converge.HoldWindowClosed), both with Object "", sorted
	// (converge.SortHolds); none when nothing waits.
	// +optional
	// +listType=atomic
	Holds []converge.Hold `json:"holds,omitempty"`
	// Conditions are Available, Progressing and Failing, with the cluster-version
	// operator's messages.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// validate reports what no worker writes: an unknown state, a negative count, more
// manifests done than there are.
func (s *Status) validate() error {
	var problems []string
	if !s.State.known() {
		problems = append(problems, fmt.Sprintf("state %q is unknown", s.State))
	}
	for _, n := range []struct {
		name string
		n    int32
	}{{"done", s.Done}, {"total", s.Total}, {"completed", s.Completed}, {"failures", s.Failures}} {
		if n.n < 0 {
			problems = append(problems, fmt.Sprintf("%s %d is negative", n.name, n.n))
		}
	}
	if s.Done > s.Total {
		problems = append(problems, fmt.Sprintf("done %d is above total %d", s.Done, s.Total))
	}
	return input.Invalid("payload", "status", problems...)
}

// percent is Done/Total in whole percent, rounded down; 0 when Total is 0.
func (s *Status) percent() int64 {
	if s.Total <= 0 {
		return 0
	}
	return int64(s.Done) * 100 / int64(s.Total)
}

// progressMessage is "Working towards 1.1.0: 512 of 862 done (59% complete)".
func (s *Status) progressMessage() string {
	if s.Total <= 0 {
		return "Working towards " + s.Release.String()
	}
	return fmt.Sprintf("Working towards %s: %d of %d done (%d%% complete)", s.Release, s.Done, s.Total, s.percent())
}

// boundMessage bounds a message the worker writes as the Condition API does.
func boundMessage(msg string) string {
	return conditions.TruncateMessage(msg, conditions.MaxMessageLength)
}

package payload

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Release identifies a payload: the version it carries and where it comes from.
type Release struct {
	// Version is the payload's version, e.g. "4.15.0".
	Version string `json:"version,omitempty"`
	// Image is where the payload is retrieved from, e.g. an image pull spec or a URL.
	Image string `json:"image,omitempty"`
}

// IsZero reports whether the release names nothing.
func (r Release) IsZero() bool { return r == Release{} }

// String prints the release as `version="4.15.0" image="…"`.
func (r Release) String() string { return fmt.Sprintf("version=%q image=%q", r.Version, r.Image) }

// Failure is the summarized error of the last apply, as plain data.
type Failure struct {
	// Reason classifies the failure, e.g. "UpdatePayloadResourceNotFound" or "MultipleErrors".
	Reason string `json:"reason"`
	// Message is for humans.
	Message string `json:"message"`
	// Effect is how much the failure weighs on the update.
	Effect Effect `json:"effect"`
	// Err is the error itself; it is not serialized.
	Err error `json:"-"`
}

// NewFailure describes err, nil for a nil err. An *UpdateError gives its reason and
// effect; any other error has reason "UpdatePayloadFailed" and effect Fail.
func NewFailure(err error) *Failure {
	if err == nil {
		return nil
	}
	var uErr *UpdateError
	if errors.As(err, &uErr) {
		return &Failure{Reason: uErr.Reason, Message: err.Error(), Effect: uErr.Effect, Err: err}
	}
	return &Failure{Reason: "UpdatePayloadFailed", Message: err.Error(), Effect: EffectFail, Err: err}
}

// MarshalText writes the effect's name.
func (e Effect) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads an effect's name.
func (e *Effect) UnmarshalText(text []byte) error {
	for c := EffectReport; c <= EffectFail; c++ {
		if c.String() == string(text) {
			*e = c
			return nil
		}
	}
	return fmt.Errorf("payload: unknown effect %q: %w", text, ErrInvalid)
}

// Status is the progress of the worker applying a payload. It is plain data: a host
// persists it and hands it back to a restarted worker (WorkerConfig.Status).
type Status struct {
	// Generation is the generation of the desired state being applied.
	Generation int64 `json:"generation"`
	// State is what the worker is doing.
	State State `json:"state,omitempty"`
	// Done is the number of manifests applied so far in this apply.
	Done int `json:"done"`
	// Total is the number of manifests in the payload.
	Total int `json:"total"`
	// Completed is the number of applies of this payload that succeeded in a row.
	Completed int `json:"completed"`
	// Initial is true while the payload is being created for the first time.
	Initial bool `json:"initial,omitempty"`
	// Reconciling is true once the payload has been applied completely.
	Reconciling bool `json:"reconciling,omitempty"`
	// Failure is the summarized error of the last apply, nil when it succeeded.
	Failure *Failure `json:"failure,omitempty"`
	// LastProgress is when the apply last made progress, truncated to seconds.
	LastProgress metav1.Time `json:"lastProgress,omitempty"`
	// Actual is the payload being applied.
	Actual Release `json:"actual"`
}

// DeepCopyInto copies s into out.
func (s *Status) DeepCopyInto(out *Status) {
	*out = *s
	if s.Failure != nil {
		f := *s.Failure
		out.Failure = &f
	}
	s.LastProgress.DeepCopyInto(&out.LastProgress)
}

// DeepCopy returns a copy of s, nil for nil.
func (s *Status) DeepCopy() *Status {
	if s == nil {
		return nil
	}
	out := new(Status)
	s.DeepCopyInto(out)
	return out
}

// Fraction is Done/Total, 0 when Total is 0.
func (s Status) Fraction() float64 {
	if s.Total <= 0 {
		return 0
	}
	return float64(s.Done) / float64(s.Total)
}

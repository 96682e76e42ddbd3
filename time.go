package converge

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MicroTime is a time persisted to the microsecond: a metav1.MicroTime that reads
// back a time written with seconds only. It writes what metav1.MicroTime writes
// ("2026-01-01T00:00:00.000000Z", in UTC; null when zero) and reads both that and
// what metav1.Time writes ("2026-01-01T00:00:00Z"), so that a status written with
// seconds, by an earlier version or by a person who patched it, reads back:
// metav1.MicroTime refuses the second form, and the host's typed client then cannot
// read the resource at all. An engine persists a time with it when a second is too
// coarse; metav1.Time, which keeps seconds, reads both forms itself.
//
// It embeds in a custom resource as a date-time string, and compares with
// equality.Semantic as its metav1.MicroTime does.
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
type MicroTime struct {
	metav1.MicroTime
}

// NewMicroTime returns t as a MicroTime.
func NewMicroTime(t time.Time) MicroTime {
	return MicroTime{MicroTime: metav1.NewMicroTime(t)}
}

// UnmarshalJSON reads an RFC 3339 time with or without fractional seconds, or null
// (the zero time).
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	var read metav1.Time
	if err := read.UnmarshalJSON(b); err != nil {
		return err
	}
	t.Time = read.Time
	return nil
}

// UnmarshalCBOR reads what MarshalCBOR writes, or what metav1.Time's writes.
func (t *MicroTime) UnmarshalCBOR(b []byte) error {
	var read metav1.Time
	if err := read.UnmarshalCBOR(b); err != nil {
		return err
	}
	t.Time = read.Time
	return nil
}

// ToUnstructured returns t as runtime.DefaultUnstructuredConverter stores it: the
// string MarshalJSON writes, nil when zero.
func (t MicroTime) ToUnstructured() any {
	if t.Time.IsZero() {
		return nil
	}
	return t.UTC().Format(metav1.RFC3339Micro)
}

// DeepCopyInto copies t into out. A time.Time is immutable, so a copy by assignment
// is deep.
func (t *MicroTime) DeepCopyInto(out *MicroTime) { *out = *t }

// DeepCopy returns a copy of t; nil for nil.
func (t *MicroTime) DeepCopy() *MicroTime {
	if t == nil {
		return nil
	}
	out := new(MicroTime)
	t.DeepCopyInto(out)
	return out
}

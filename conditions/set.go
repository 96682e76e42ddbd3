package conditions

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// Option changes how Set and the kstatus helpers write a condition. Make one
// with WithObservedGeneration; the zero Option changes nothing.
type Option struct {
	generation    int64
	hasGeneration bool
}

// WithObservedGeneration stamps the object's metadata.generation as the
// condition's ObservedGeneration, overriding the value in the condition.
func WithObservedGeneration(gen int64) Option {
	return Option{generation: gen, hasGeneration: true}
}

// Set inserts or updates the condition of c.Type in *conds and reports
// whether anything changed.
//
// Unlike meta.SetStatusCondition it never reads the wall clock:
// LastTransitionTime becomes now, truncated to seconds, when the condition is
// new or its status changes, and stays as it was otherwise (the value in c is
// ignored). An empty reason on a True or Unknown condition becomes
// ReasonAsExpected. The list is sorted with Sort afterwards.
//
// Bad input (see Validate, and a nil conds) returns an error wrapping
// converge.ErrInvalid and leaves *conds untouched. Setting a condition that is already
// there as it is allocates nothing.
func Set(conds *[]metav1.Condition, c metav1.Condition, now time.Time, opts ...Option) (changed bool, err error) {
	if conds == nil {
		return false, invalid("", "conditions", "the list pointer is nil")
	}
	for _, o := range opts {
		if o.hasGeneration {
			c.ObservedGeneration = o.generation
		}
	}
	if c.Reason == "" && c.Status != metav1.ConditionFalse {
		c.Reason = ReasonAsExpected
	}
	if err := Validate(c); err != nil {
		return false, err
	}
	at := metav1.NewTime(now.Truncate(time.Second))
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
			return false, nil
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = at
		}
		*old = c
		Sort(*conds)
		return true, nil
	}
	c.LastTransitionTime = at
	*conds = append(*conds, c)
	Sort(*conds)
	return true, nil
}

// SetWithClock is Set with the time read from clk.
func SetWithClock(conds *[]metav1.Condition, c metav1.Condition, clk clock.PassiveClock, opts ...Option) (bool, error) {
	return Set(conds, c, clk.Now(), opts...)
}

// Remove deletes every condition of condType from *conds, keeping the order
// of the rest, and reports whether one was there. A nil conds has nothing to
// remove.
func Remove(conds *[]metav1.Condition, condType string) bool {
	if conds == nil {
		return false
	}
	kept := (*conds)[:0]
	for _, c := range *conds {
		if c.Type != condType {
			kept = append(kept, c)
		}
	}
	removed := len(kept) != len(*conds)
	clear((*conds)[len(kept):])
	*conds = kept
	return removed
}

// Get returns a copy of the condition of condType and whether it is there.
func Get(conds []metav1.Condition, condType string) (metav1.Condition, bool) {
	for _, c := range conds {
		if c.Type == condType {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// IsTrue reports whether the condition of condType is there and True.
func IsTrue(conds []metav1.Condition, condType string) bool {
	return statusOf(conds, condType) == metav1.ConditionTrue
}

// IsFalse reports whether the condition of condType is there and False.
func IsFalse(conds []metav1.Condition, condType string) bool {
	return statusOf(conds, condType) == metav1.ConditionFalse
}

// IsUnknown reports whether the condition of condType is Unknown or missing:
// a condition nobody reported is not known to be True or False.
func IsUnknown(conds []metav1.Condition, condType string) bool {
	return statusOf(conds, condType) == metav1.ConditionUnknown
}

func statusOf(conds []metav1.Condition, condType string) metav1.ConditionStatus {
	if c, ok := Get(conds, condType); ok {
		return c.Status
	}
	return metav1.ConditionUnknown
}

package conditions

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Polarity says which status of a condition type is the good one.
type Polarity int

const (
	// Positive types are good when True (Available, Ready). The Kubernetes
	// API conventions prefer them, so a type nobody declared is Positive.
	Positive Polarity = iota
	// Negative types are good when False and abnormal when True (Degraded,
	// Failing, Stalled, Reconciling, Progressing).
	Negative
)

// String returns "Positive" or "Negative".
func (p Polarity) String() string {
	if p == Negative {
		return "Negative"
	}
	return "Positive"
}

// Polarities declares the polarity of condition types. A host adds its own
// types to the defaults:
//
//	pols := conditions.Polarities{"Throttled": conditions.Negative}
//
// Of looks a type up in the map, then in DefaultPolarities, then matches it
// by suffix against both (so "NodeInstallerDegraded" is Negative like
// "Degraded"); a type found nowhere is Positive. The nil map is the defaults.
type Polarities map[string]Polarity

// DefaultPolarities returns the polarity of the well-known types.
func DefaultPolarities() Polarities {
	return Polarities{
		TypeAvailable:   Positive,
		TypeReady:       Positive,
		TypeProgressing: Negative,
		TypeDegraded:    Negative,
		TypeReconciling: Negative,
		TypeStalled:     Negative,
		TypeFailing:     Negative,
	}
}

var defaultPolarities = DefaultPolarities()

// Of returns the polarity of condType.
func (p Polarities) Of(condType string) Polarity {
	if pol, ok := p[condType]; ok {
		return pol
	}
	if pol, ok := defaultPolarities[condType]; ok {
		return pol
	}
	best, pol := 0, Positive
	for _, m := range []Polarities{p, defaultPolarities} {
		for suffix, sp := range m {
			if len(suffix) > best && strings.HasSuffix(condType, suffix) {
				best, pol = len(suffix), sp
			}
		}
	}
	return pol
}

// Good returns the status that is good for condType: True for a Positive
// type, False for a Negative one.
func (p Polarities) Good(condType string) metav1.ConditionStatus {
	if p.Of(condType) == Negative {
		return metav1.ConditionFalse
	}
	return metav1.ConditionTrue
}

// Bad returns the status that is abnormal for condType, the opposite of Good.
func (p Polarities) Bad(condType string) metav1.ConditionStatus {
	return opposite(p.Good(condType))
}

// IsGood reports whether c has the good status for its type.
func (p Polarities) IsGood(c metav1.Condition) bool { return c.Status == p.Good(c.Type) }

// IsBad reports whether c has the abnormal status for its type. An Unknown
// condition is neither good nor bad.
func (p Polarities) IsBad(c metav1.Condition) bool { return c.Status == p.Bad(c.Type) }

func opposite(s metav1.ConditionStatus) metav1.ConditionStatus {
	if s == metav1.ConditionTrue {
		return metav1.ConditionFalse
	}
	return metav1.ConditionTrue
}

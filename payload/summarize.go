package payload

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// summarize reduces the errors of a graph run to one error a human can act on, or nil.
// Context errors (also wrapped ones) are dropped. UpdateErrors about the same kind with
// the same Reason and a PluralMessageFormat are condensed into one error naming every
// object, with the strongest Effect. One remaining error is returned as is; several
// become an *UpdateError with Reason ReasonMultipleErrors, the strongest Effect and a
// message of sorted, de-duplicated bullets. Errors that all have the same text are one
// error: the first of those with the strongest effect.
func summarize(errs []error) error {
	kept := make([]error, 0, len(errs))
	for _, err := range errs {
		if err != nil && !isContextError(err) {
			kept = append(kept, err)
		}
	}
	kept = condense(kept)
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	messages := make([]string, 0, len(kept))
	effect := EffectReport
	for _, err := range kept {
		messages = append(messages, err.Error())
		effect = stronger(effect, effectOf(err))
	}
	slices.Sort(messages)
	messages = slices.Compact(messages)
	if len(messages) == 1 {
		return strongest(kept)
	}
	return &UpdateError{
		Nested:  errors.Join(kept...),
		Effect:  effect,
		Reason:  ReasonMultipleErrors,
		Message: "Multiple errors are preventing progress:\n* " + strings.Join(messages, "\n* "),
	}
}

// strongest returns the first error of errs with the strongest effect.
func strongest(errs []error) error {
	best := errs[0]
	for _, err := range errs[1:] {
		if effectOf(err).rank() > effectOf(best).rank() {
			best = err
		}
	}
	return best
}

type condenseKey struct {
	kind   schema.GroupKind
	reason string
}

// condense merges UpdateErrors of one kind and reason that carry a plural form. The
// merged error takes the place of the first error of its group.
func condense(errs []error) []error {
	groups := map[condenseKey][]*UpdateError{}
	for _, err := range errs {
		if key, uErr, ok := condensable(err); ok {
			groups[key] = append(groups[key], uErr)
		}
	}
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		key, _, ok := condensable(err)
		if !ok || len(groups[key]) == 1 {
			out = append(out, err)
			continue
		}
		group := groups[key]
		if group == nil {
			continue
		}
		out = append(out, condenseGroup(group))
		groups[key] = nil
	}
	return out
}

// condensable returns the group of an UpdateError about a manifest that carries a
// plural form: its kind and reason.
func condensable(err error) (condenseKey, *UpdateError, bool) {
	uErr, ok := err.(*UpdateError)
	if !ok || uErr.PluralMessageFormat == "" {
		return condenseKey{}, nil, false
	}
	m := manifestOf(uErr.Task)
	if m == nil {
		return condenseKey{}, nil, false
	}
	return condenseKey{kind: m.GVK.GroupKind(), reason: uErr.Reason}, uErr, true
}

func condenseGroup(group []*UpdateError) *UpdateError {
	nested := make([]error, 0, len(group))
	names := make([]string, 0, len(group))
	effect := EffectReport
	for _, e := range group {
		nested = append(nested, e)
		name := e.Name
		if name == "" {
			name = manifestOf(e.Task).Name()
		}
		names = append(names, name)
		effect = stronger(effect, e.Effect)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	name := strings.Join(names, ", ")
	first := group[0]
	reason := first.PluralReason
	if reason == "" {
		reason = first.Reason
	}
	return &UpdateError{
		Nested:              errors.Join(nested...),
		Effect:              effect,
		Reason:              reason,
		PluralReason:        reason,
		Message:             fmt.Sprintf(first.PluralMessageFormat, name),
		PluralMessageFormat: first.PluralMessageFormat,
		Name:                name,
		Names:               names,
	}
}

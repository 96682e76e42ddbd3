package conditions

import (
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UnionOptions says how Union collapses sub-conditions.
type UnionOptions struct {
	// Type is both the suffix that selects the sub-conditions
	// ("FooDegraded", "BarDegraded") and the type of the result ("Degraded").
	// A condition of exactly this type is not a sub-condition.
	Type string
	// Default is the status of the result when no sub-condition is abnormal.
	// Empty means the good status for Type by DefaultPolarities: False for
	// Degraded, True for Available.
	Default metav1.ConditionStatus
	// Inertia returns how long a sub-condition must have been away from
	// Default (measured from its LastTransitionTime to now) before it counts.
	// Nil means no grace period.
	Inertia func(metav1.Condition) time.Duration
}

// InertiaByType returns an Inertia function giving each sub-condition type
// in perType its own grace period and every other type def.
func InertiaByType(def time.Duration, perType map[string]time.Duration) func(metav1.Condition) time.Duration {
	return func(c metav1.Condition) time.Duration {
		if d, ok := perType[c.Type]; ok {
			return d
		}
		return def
	}
}

// Union collapses every sub-condition whose type ends with opts.Type into one
// condition of that type, the way a cluster operator reports one Degraded
// made of its controllers' FooDegraded conditions.
//
// A sub-condition away from the default status counts once it has been so for
// its inertia. The result is:
//   - the opposite of the default when a counted sub-condition has that
//     status; else
//   - Unknown when a counted sub-condition is Unknown; else
//   - the default, with reason ReasonAsExpected.
//
// A non-default result joins the counted sub-conditions' reasons as
// "Prefix_Reason" (see SanitizeReason) sorted by type and separated by "::"
// (Foo_Crashing::Bar_Slow),
// and its message has one "Type: message" line per counted sub-condition.
// A default result keeps one line per sub-condition that has a message.
// However many sub-conditions there are, the result stays within the API's
// limits: the message is bounded by JoinBounded ("… and N more"), and a
// reason that would pass MaxReasonLength keeps the first reasons that fit
// and ends with "::AndNMore".
// The result has no LastTransitionTime: Set gives it one.
func Union(conds []metav1.Condition, opts UnionOptions, now time.Time) (metav1.Condition, error) {
	if opts.Type == "" {
		return metav1.Condition{}, invalid("", "UnionOptions.Type", "must not be empty")
	}
	def := opts.Default
	switch def {
	case "":
		def = DefaultPolarities().Good(opts.Type)
	case metav1.ConditionTrue, metav1.ConditionFalse:
	default:
		return metav1.Condition{}, invalid(opts.Type, "UnionOptions.Default", "%q is not True or False", def)
	}
	var subs []metav1.Condition
	for _, c := range conds {
		if c.Type != opts.Type && strings.HasSuffix(c.Type, opts.Type) {
			subs = append(subs, c)
		}
	}
	slices.SortStableFunc(subs, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })

	var bad, unknown []metav1.Condition
	for _, c := range subs {
		if c.Status == def || !pastInertia(c, opts.Inertia, now) {
			continue
		}
		if c.Status == opposite(def) {
			bad = append(bad, c)
		} else {
			unknown = append(unknown, c)
		}
	}
	out := metav1.Condition{Type: opts.Type}
	counted := bad
	switch {
	case len(bad) > 0:
		out.Status = opposite(def)
	case len(unknown) > 0:
		out.Status = metav1.ConditionUnknown
		counted = unknown
	default:
		out.Status = def
		out.Reason = ReasonAsExpected
		out.Message = unionMessage(subs, false)
		return out, nil
	}
	reasons := make([]string, 0, len(counted))
	for _, c := range counted {
		reasons = append(reasons, sourceReason(strings.TrimSuffix(c.Type, opts.Type), c.Reason))
	}
	out.Reason = joinReasons(reasons)
	out.Message = unionMessage(counted, true)
	return out, nil
}

func pastInertia(c metav1.Condition, inertia func(metav1.Condition) time.Duration, now time.Time) bool {
	if inertia == nil {
		return true
	}
	return now.Sub(c.LastTransitionTime.Time) >= inertia(c)
}

// unionMessage writes one "Type: message" line per condition; with
// reasonFallback a condition without a message shows its reason instead,
// without it such a condition is left out.
func unionMessage(conds []metav1.Condition, reasonFallback bool) string {
	var lines []string
	for _, c := range conds {
		msg := c.Message
		if msg == "" && reasonFallback {
			msg = c.Reason
		}
		if msg != "" {
			lines = append(lines, c.Type+": "+msg)
		}
	}
	return JoinBounded(lines, "\n", MaxMessageLength)
}

// sourceReason is "Prefix_Reason" made valid: a prefix such as
// "example.com/Foo" or a malformed reason passes through SanitizeReason, and
// a source with neither gives "Unnamed".
func sourceReason(prefix, reason string) string {
	r := SanitizeReason(prefix)
	if reason = SanitizeReason(reason); reason != "" {
		if r != "" {
			r += "_"
		}
		r += reason
	}
	if r == "" {
		return "Unnamed"
	}
	return r
}

// joinReasons joins reasons with "::" within MaxReasonLength: when they do
// not all fit it keeps the first ones that do and ends with "::AndNMore"; a
// first reason too long even alone is cut and stays a valid reason.
func joinReasons(reasons []string) string {
	joined := strings.Join(reasons, "::")
	if len(joined) <= MaxReasonLength {
		return joined
	}
	var b strings.Builder
	kept := 0
	for i, r := range reasons {
		n := len(r)
		if i > 0 {
			n += len("::")
		}
		if left := len(reasons) - i - 1; left > 0 {
			n += len(andMore(left))
		}
		if b.Len()+n > MaxReasonLength {
			break
		}
		if i > 0 {
			b.WriteString("::")
		}
		b.WriteString(r)
		kept++
	}
	if kept == 0 {
		room := MaxReasonLength
		if len(reasons) > 1 {
			room -= len(andMore(len(reasons) - 1))
		}
		b.WriteString(strings.TrimRight(reasons[0][:room], ",:"))
		kept = 1
	}
	if left := len(reasons) - kept; left > 0 {
		b.WriteString(andMore(left))
	}
	return b.String()
}

func andMore(n int) string { return "::And" + strconv.Itoa(n) + "More" }

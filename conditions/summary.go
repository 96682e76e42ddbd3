package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of a summary made of several conditions of the same rank.
const (
	// ReasonIssuesReported: several summarised conditions are abnormal.
	ReasonIssuesReported = "IssuesReported"
	// ReasonUnknownReported: several summarised conditions are Unknown or missing.
	ReasonUnknownReported = "UnknownReported"
	// ReasonInfoReported: all summarised conditions are good.
	ReasonInfoReported = "InfoReported"
)

// notYetReported is the message of a summarised type missing from the list.
const notYetReported = "Condition not yet reported"

// SummaryOptions says which conditions Summary summarises, into what.
type SummaryOptions struct {
	// Type of the result: a positive type; empty means Ready.
	Type string
	// ForTypes lists the types to summarise, in the order their messages
	// appear; at least one, no duplicates.
	ForTypes []string
	// Polarities tells which status of each type is good; nil means the
	// defaults.
	Polarities Polarities
}

type rankedCondition struct {
	cond metav1.Condition
	rank int // 0 issue, 1 unknown, 2 info
}

// Summary computes one positive condition (Ready by default) from the
// conditions of opts.ForTypes, in the manner of Cluster API's v1beta2
// summary. Each type ranks as an issue (abnormal for its polarity), as
// unknown (Unknown, or missing: then reason ReasonNotYetReported), or as info
// (good). The result is False when there is an issue, else Unknown when
// something is unknown, else True. Its reason is the reason of the single
// condition of the highest rank, or ReasonIssuesReported,
// ReasonUnknownReported or ReasonInfoReported when several share it. Its
// message has one "* Type: message" bullet per issue, then per unknown, then
// per info condition that has a message, each group in ForTypes order,
// bounded by JoinBounded to MaxMessageLength ("… and N more").
// The result has no LastTransitionTime: Set gives it one.
func Summary(conds []metav1.Condition, opts SummaryOptions) (metav1.Condition, error) {
	typ := opts.Type
	if typ == "" {
		typ = TypeReady
	}
	if opts.Polarities.Of(typ) == Negative {
		return metav1.Condition{}, invalid(typ, "SummaryOptions.Type", "a summary must be of a positive type")
	}
	if len(opts.ForTypes) == 0 {
		return metav1.Condition{}, invalid(typ, "SummaryOptions.ForTypes", "must name at least one type")
	}
	ranked := make([]rankedCondition, 0, len(opts.ForTypes))
	seen := make(map[string]bool, len(opts.ForTypes))
	for _, t := range opts.ForTypes {
		if t == "" || t == typ || seen[t] {
			return metav1.Condition{}, invalid(typ, "SummaryOptions.ForTypes", "%q is empty, the summary's own type, or listed twice", t)
		}
		seen[t] = true
		c, ok := Get(conds, t)
		if !ok {
			c = metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: ReasonNotYetReported, Message: notYetReported}
		}
		r := 1
		switch {
		case opts.Polarities.IsBad(c):
			r = 0
		case opts.Polarities.IsGood(c):
			r = 2
		}
		ranked = append(ranked, rankedCondition{cond: c, rank: r})
	}

	top, count := 3, 0 // every condition ranks below 3, so the first sets top
	var single metav1.Condition
	for _, rc := range ranked {
		switch {
		case rc.rank < top:
			top, count, single = rc.rank, 1, rc.cond
		case rc.rank == top:
			count++
		}
	}
	out := metav1.Condition{Type: typ}
	out.Status = [...]metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionUnknown, metav1.ConditionTrue}[top]
	out.Reason = [...]string{ReasonIssuesReported, ReasonUnknownReported, ReasonInfoReported}[top]
	if count == 1 && single.Reason != "" {
		out.Reason = single.Reason
	}
	var bullets []string
	for r := 0; r <= 2; r++ {
		for _, rc := range ranked {
			if rc.rank != r {
				continue
			}
			msg := rc.cond.Message
			if msg == "" && r < 2 {
				msg = rc.cond.Reason
			}
			if msg != "" {
				bullets = append(bullets, "* "+rc.cond.Type+": "+msg)
			}
		}
	}
	out.Message = JoinBounded(bullets, "\n", MaxMessageLength)
	return out, nil
}

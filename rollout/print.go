package rollout

import (
	"fmt"
	"strconv"
	"strings"
)

// String renders the decision as a short human-readable text, one line per
// step, then the gate's question, the holds and when to look again.
func (d Decision) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %d: %s", d.Latest, d.Reason)
	if d.Start != "" {
		fmt.Fprintf(&b, "\nstart %s (%s)", d.Start, d.StartReason)
	}
	for _, s := range d.Steps {
		fmt.Fprintf(&b, "\n  %s: %s", s.Node, s.Reason)
		if s.Remove {
			b.WriteString("; remove")
		}
		if s.To != nil {
			fmt.Fprintf(&b, "; current %d, target %s", s.To.CurrentRevision, target(s.To.TargetRevision))
		}
		for _, i := range s.Delete {
			fmt.Fprintf(&b, "; delete %s", i.Name)
		}
		if s.Create != nil {
			fmt.Fprintf(&b, "; create %s", s.Create.Name)
		}
	}
	if q := d.Unadmitted; q != nil {
		fmt.Fprintf(&b, "\n  %s: ask the gate about %s, with %s down", q.Installer.Node, q.Installer.Name, listNames(q.Down))
	}
	for _, h := range d.Holds {
		fmt.Fprintf(&b, "\nheld (%s): %s", h.Reason, h.Message)
	}
	if d.RequeueAfter > 0 {
		fmt.Fprintf(&b, "\nrequeue after %v", d.RequeueAfter)
	}
	return b.String()
}

// target renders a target revision: "-" for none.
func target(rev int32) string {
	if rev == 0 {
		return "-"
	}
	return strconv.Itoa(int(rev))
}

// summarize sums d up in a line: converged, the first step that acts (or
// the first step), the first hold, or why there is nothing to do.
func summarize(d Decision) string {
	if d.Status.Converged() {
		return fmt.Sprintf("%s at revision %d", nodesAre(len(d.Status.NodeStatuses)), d.Latest)
	}
	for _, s := range d.Steps {
		if s.Acts() {
			return s.Node + ": " + s.Reason
		}
	}
	switch {
	case len(d.Steps) > 0:
		return d.Steps[0].Node + ": " + d.Steps[0].Reason
	case len(d.Holds) > 0:
		return d.Holds[0].Message
	case len(d.Status.NodeStatuses) == 0:
		return "no nodes"
	}
	return "nothing to do"
}

// written names what writing Status changes, for an error: the nodes of
// the steps that change status, each once (a node that joins and starts
// has two steps), or the rollout's own status.
func (d Decision) written() string {
	var names []string
	seen := map[string]bool{}
	for _, s := range d.Steps {
		if (s.To != nil || s.Remove || len(s.Delete) > 0) && !seen[s.Node] {
			seen[s.Node] = true
			names = append(names, s.Node)
		}
	}
	switch len(names) {
	case 0:
		return "the rollout status"
	case 1:
		return "status of node " + names[0]
	}
	return fmt.Sprintf("status of node %s and %d more", names[0], len(names)-1)
}

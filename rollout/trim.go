package rollout

import (
	"strconv"
	"strings"

	"github.com/converge-dev/converge/conditions"
)

// Bounds on what the engine persists and reports, so that no observation,
// however many nodes or however long their errors, yields a status the API
// refuses.
const (
	// MaxFailedErrors is how many errors NodeStatus.LastFailedErrors keeps.
	MaxFailedErrors = 8
	// MaxErrorLength bounds each of NodeStatus.LastFailedErrors, in bytes.
	MaxErrorLength = 512
	// MaxEventMessageLength bounds an event's message, in bytes (the
	// events.k8s.io note limit).
	MaxEventMessageLength = 1024
	// maxListedNodes is how many nodes a condition or event message names
	// before "… and N more".
	maxListedNodes = 20
)

// trimErrors bounds a list of errors: at most MaxFailedErrors, each at
// most MaxErrorLength bytes, the last one saying how many were left out.
func trimErrors(errs []string) []string {
	if !needsTrim(errs) {
		return errs
	}
	out := make([]string, 0, min(len(errs), MaxFailedErrors))
	for i, e := range errs {
		if i == MaxFailedErrors-1 && len(errs) > MaxFailedErrors {
			out = append(out, "… and "+strconv.Itoa(len(errs)-i)+" more errors")
			break
		}
		out = append(out, conditions.TruncateMessage(e, MaxErrorLength))
	}
	return out
}

func needsTrim(errs []string) bool {
	if len(errs) > MaxFailedErrors {
		return true
	}
	for _, e := range errs {
		if len(e) > MaxErrorLength {
			return true
		}
	}
	return false
}

// listNames joins names with ", ", naming at most maxListedNodes and
// saying how many more there are.
func listNames(names []string) string {
	if len(names) <= maxListedNodes {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListedNodes], ", ") + " … and " + strconv.Itoa(len(names)-maxListedNodes) + " more"
}

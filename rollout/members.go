package rollout

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/converge-dev/converge/internal/input"
)

// members are the nodes a decision decides, sorted by name, and what the
// host observed of each, at the same index.
type members struct {
	nodes []NodeStatus
	views []NodeObservation
	// shared is true while nodes is the input status's memory: set copies
	// it before it changes a node.
	shared bool
}

// viewPool holds the buffers that align an Observation with the status's
// nodes (see withViews).
var viewPool sync.Pool

// withViews lends f a buffer of n observations and gives it back to a
// pool once f returns, cleared so that it holds no observation's memory: a
// decision of thousands of nodes aligns all their observations each time.
func withViews(n int, f func([]NodeObservation) (Decision, error)) (Decision, error) {
	b, ok := viewPool.Get().(*[]NodeObservation)
	if !ok || cap(*b) < n {
		s := make([]NodeObservation, n)
		b = &s
	}
	defer func() {
		clear((*b)[:cap(*b)])
		viewPool.Put(b)
	}()
	return f((*b)[:n])
}

// align aligns the observations with the status's nodes that are still
// observed, sorted by name, in buf (of the status's length), and adds new
// observed nodes. A node that left gets a Remove step and its unfinished
// installer must go. When nothing joined or left and the status is sorted,
// the nodes are the status's own (shared): they are copied before one
// changes.
func (x *decider) align(status []NodeStatus, obs Observation, buf []NodeObservation) error {
	if !sortedByName(status) {
		status = sortNodes(status)
	}
	left := false
	for i, n := range status {
		o, ok := obs[n.NodeName]
		if !ok {
			left = true
			break
		}
		if err := o.validate(n.NodeName); err != nil {
			return err
		}
		buf[i] = o
	}
	if !left && len(status) == len(obs) {
		x.nodes, x.views, x.shared = status, buf, true
		return nil
	}
	nodes, views, err := x.stayed(status, obs, buf[:0])
	if err != nil {
		return err
	}
	x.nodes, x.views, err = x.joined(nodes, views, obs)
	return err
}

// stayed returns the status's nodes still observed, and their
// observations appended to views; a node that left gets a Remove step.
func (x *decider) stayed(status []NodeStatus, obs Observation, views []NodeObservation) ([]NodeStatus, []NodeObservation, error) {
	nodes := make([]NodeStatus, 0, len(status))
	for _, n := range status {
		o, ok := obs[n.NodeName]
		if !ok {
			d := NodeDecision{Node: n.NodeName, Remove: true, Reason: "left the cluster"}
			if n.InTransition() && n.InstallerOrderedTime != nil {
				d.Delete = []Installer{installerFor(n)}
				x.retired(d.Delete, InstallerNotFound)
			}
			x.d.Steps = append(x.d.Steps, d)
			continue
		}
		if err := o.validate(n.NodeName); err != nil {
			return nil, nil, err
		}
		nodes = append(nodes, n)
		views = append(views, o)
	}
	return nodes, views, nil
}

// joined adds the observed nodes the status does not have, each at the
// revision its operand runs, and returns every node sorted by name.
func (x *decider) joined(nodes []NodeStatus, views []NodeObservation, obs Observation) ([]NodeStatus, []NodeObservation, error) {
	var names []string
	for name := range obs {
		if _, found := slices.BinarySearchFunc(nodes, name, func(n NodeStatus, name string) int { return strings.Compare(n.NodeName, name) }); !found {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nodes, views, nil
	}
	slices.Sort(names)
	for _, name := range names {
		if name == "" {
			return nil, nil, input.Invalidf("rollout", "observation", "a node with an empty name")
		}
		o := obs[name]
		if err := o.validate(name); err != nil {
			return nil, nil, err
		}
		n := joining(name, o)
		x.d.Steps = append(x.d.Steps, NodeDecision{Node: name, To: &n, Reason: fmt.Sprintf("joined the cluster at revision %d", n.CurrentRevision)})
		nodes = append(nodes, n)
		views = append(views, o)
	}
	idx := make([]int, len(nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(nodes[a].NodeName, nodes[b].NodeName) })
	sortedNodes, sortedViews := make([]NodeStatus, len(nodes)), make([]NodeObservation, len(nodes)) // rare: nodes joined
	for i, j := range idx {
		sortedNodes[i], sortedViews[i] = nodes[j], views[j]
	}
	return sortedNodes, sortedViews, nil
}

// validateAligned checks observations aligned with sorted nodes.
func validateAligned(nodes []NodeStatus, views []NodeObservation) error {
	if len(nodes) != len(views) {
		return input.Invalidf("rollout", "observation", "aligned observations of %d nodes for %d nodes", len(views), len(nodes))
	}
	for i, o := range views {
		if err := o.validate(nodes[i].NodeName); err != nil {
			return err
		}
	}
	return nil
}

// identity reconciles node i's status with the UID observed: a status
// without one takes it; a status of another UID is the predecessor's of a
// machine replaced under the same name, and starts afresh at the revision
// the new machine's operand runs, its predecessor's installer deleted.
func (x *decider) identity(i int) {
	n, o := x.nodes[i], x.views[i]
	if o.UID == "" || n.NodeUID == o.UID {
		return
	}
	if n.NodeUID == "" {
		n.NodeUID = o.UID
		x.set(i, n)
		x.d.Steps = append(x.d.Steps, NodeDecision{Node: n.NodeName, Reason: "node UID recorded", To: &n})
		return
	}
	fresh := joining(n.NodeName, o)
	step := NodeDecision{Node: n.NodeName, To: &fresh,
		Reason: fmt.Sprintf("replaced by a new machine (UID %s, was %s)", o.UID, n.NodeUID)}
	if attempted(n, o.Installer) {
		step.Delete = []Installer{installerFor(n)}
		x.retired(step.Delete, o.Installer.Phase)
	}
	x.set(i, fresh)
	x.d.Steps = append(x.d.Steps, step)
}

// joining is the status of a node that joins the rollout: it starts at the
// revision its operand runs.
func joining(name string, o NodeObservation) NodeStatus {
	n := NodeStatus{NodeName: name, NodeUID: o.UID}
	if o.Operand.Phase != OperandNotFound {
		n.CurrentRevision = o.Operand.Revision
	}
	return n
}

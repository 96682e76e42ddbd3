package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// String prints the graph as a text plan, nodes in the order a single worker would run
// them: one line per node with its run level, component and predecessors, then one
// indented line per task, with the file it comes from. A nil graph prints nothing.
func (g *Graph) String() string {
	if g == nil {
		return ""
	}
	var b strings.Builder
	for _, i := range g.runOrder() {
		n := g.nodes[i]
		fmt.Fprintf(&b, "node %d: %s", i, n.label())
		if len(n.in) > 0 {
			fmt.Fprintf(&b, ", after %s", joinInts(sortedInts(n.in), ", "))
		}
		b.WriteByte('\n')
		for _, t := range n.tasks {
			fmt.Fprintf(&b, "  %s %s\n", t.place().File, t)
		}
	}
	return b.String()
}

// runOrder returns the node indexes in the order Run with one worker, in
// LowestIndexFirst order, starts them, or in index order when the graph is invalid.
func (g *Graph) runOrder() []int {
	order := make([]int, 0, len(g.nodes))
	sealed := &Graph{nodes: g.nodes}
	if sealed.seal() != nil {
		for i := range g.nodes {
			order = append(order, i)
		}
		return order
	}
	var s schedule
	s.init(sealed, Options{Workers: 1})
	for k, ok := s.next(); ok; k, ok = s.next() {
		order = append(order, int(k))
		s.finish(k, nil)
	}
	return order
}

// Mermaid prints the graph as a Mermaid flowchart, one box per node.
func (g *Graph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, n := range g.nodeList() {
		fmt.Fprintf(&b, "  n%d[\"%s\"]\n", i, n.label())
	}
	g.eachEdge(func(from, to int) { fmt.Fprintf(&b, "  n%d --> n%d\n", from, to) })
	return b.String()
}

// DOT prints the graph in Graphviz DOT, one box per node.
func (g *Graph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph tasks {\n  labelloc=t;\n  rankdir=TB;\n")
	for i, n := range g.nodeList() {
		fmt.Fprintf(&b, "  %d [ label=\"%s\" shape=\"box\" ];\n", i, n.label())
	}
	g.eachEdge(func(from, to int) { fmt.Fprintf(&b, "  %d -> %d;\n", from, to) })
	b.WriteString("}\n")
	return b.String()
}

// eachEdge calls fn for every edge, by source and then target.
func (g *Graph) eachEdge(fn func(from, to int)) {
	for i, n := range g.nodeList() {
		for _, to := range sortedInts(n.out) {
			fn(i, to)
		}
	}
}

// nodeList returns the nodes of g, none when g is nil.
func (g *Graph) nodeList() []*taskNode {
	if g == nil {
		return nil
	}
	return g.nodes
}

func sortedInts(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func joinInts(s []int, sep string) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, sep)
}

package graph

import "fmt"

// Item is what a Task runs. The graph knows an item only through these methods, so
// that it runs anything: manifest.Manifest is the payload's item.
type Item interface {
	// String names the item in messages: `deployment "ns/web"`.
	String() string
	// Place says where the item sits in its input; Build orders items by it.
	Place() Place
	// Ref names the item for the Dependencies of others: "Deployment/ns/web".
	Ref() string
	// Dependencies lists the Refs of the items that must succeed before it starts.
	Dependencies() []string
}

// Place is where an item sits in its input, what Build orders it by. The zero Place
// is an item without a run level that is no barrier.
type Place struct {
	// File is the file the item was read from; plans print it.
	File string
	// RunLevel and Component group items: OrderRunLevels runs the levels one after
	// the other and the components of a level in parallel, the items of a component
	// in input order. An item without a Component has no run level: it is a step of
	// its own.
	RunLevel  int
	Component string
	// Barrier marks an item that nothing before it passes: every item before it
	// succeeds before it starts, every item after it starts after it succeeded (a
	// Job, for manifests).
	Barrier bool
}

// Task is one item to run, with its place in the input.
type Task struct {
	// Index is the 1-based position of the task in the input.
	Index int
	// Total is the number of tasks in the input.
	Total int
	// Item is what the task runs.
	Item Item
}

// NewTasks makes one task per item, numbered 1..len(items).
func NewTasks(items []Item) []*Task {
	tasks := make([]*Task, len(items))
	all := make([]Task, len(items))
	for i, item := range items {
		all[i] = Task{Index: i + 1, Total: len(items), Item: item}
		tasks[i] = &all[i]
	}
	return tasks
}

// String names the task in messages: `deployment "ns/name" (3 of 10)`.
func (t *Task) String() string {
	if t == nil {
		return "task (0 of 0)"
	}
	if t.Item == nil {
		return fmt.Sprintf("task (%d of %d)", t.Index, t.Total)
	}
	return fmt.Sprintf("%s (%d of %d)", t.Item, t.Index, t.Total)
}

// place returns the task's place, the zero Place when it has no item.
func (t *Task) place() Place {
	if t == nil || t.Item == nil {
		return Place{}
	}
	return t.Item.Place()
}

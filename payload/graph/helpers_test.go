package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// item is a test Item: an object of kind named after its file, whose run level and
// component the file name gives as a payload's file names do
// ("0000_<level>_<component>_…"), a barrier when it is a Job.
type item struct {
	file string
	kind string
	deps []string
}

func (i *item) String() string         { return fmt.Sprintf("%s %q", strings.ToLower(i.kind), i.file) }
func (i *item) Ref() string            { return i.kind + "/" + i.file }
func (i *item) Dependencies() []string { return i.deps }

func (i *item) Place() Place {
	p := Place{File: i.file, Barrier: i.kind == "Job"}
	parts := strings.SplitN(i.file, "_", 4)
	if len(parts) == 4 && parts[0] == "0000" {
		if level, err := strconv.Atoi(parts[1]); err == nil {
			p.RunLevel, p.Component = level, parts[2]
		}
	}
	return p
}

var _ Item = (*item)(nil)

// newTask returns the task of an item of kind named after its file.
func newTask(file, kind string, deps ...string) *Task {
	return &Task{Index: 1, Total: 1, Item: &item{file: file, kind: kind, deps: deps}}
}

func pod(file string) *Task { return newTask(file, "Pod") }
func job(file string) *Task { return newTask(file, "Job") }

func pods(files ...string) []*Task {
	tasks := make([]*Task, len(files))
	for i, f := range files {
		tasks[i] = pod(f)
	}
	return tasks
}

// fileOf is the file of a test task's item.
func fileOf(t *Task) string { return t.Item.Place().File }

// nodeView is a node reduced to what tests compare: edges and task files.
type nodeView struct {
	in    []int
	Files []string
	out   []int
}

func view(nodes []*taskNode) []nodeView {
	out := make([]nodeView, len(nodes))
	for i, n := range nodes {
		out[i] = nodeView{in: n.in, out: n.out, Files: filesOf(n.tasks)}
	}
	return out
}

func filesOf(tasks []*Task) []string {
	var files []string
	for _, t := range tasks {
		files = append(files, fileOf(t))
	}
	return files
}

// stepsView reduces a breakFunc result to the files of each node of each step.
func stepsView(steps [][]*taskNode) [][][]string {
	if steps == nil {
		return nil
	}
	out := make([][][]string, len(steps))
	for i, step := range steps {
		for _, n := range step {
			out[i] = append(out[i], filesOf(n.tasks))
		}
	}
	return out
}

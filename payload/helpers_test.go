package payload

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	cmGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// newTask returns a task for a manifest of kind gvk named after its file.
func newTask(file string, gvk schema.GroupVersionKind, deps ...string) *Task {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(file)
	return &Task{Index: 1, Total: 1, Manifest: &Manifest{File: file, GVK: gvk, Object: obj, DependsOn: deps}}
}

func pod(file string) *Task { return newTask(file, podGVK) }
func job(file string) *Task { return newTask(file, jobGVK) }

func pods(files ...string) []*Task {
	tasks := make([]*Task, len(files))
	for i, f := range files {
		tasks[i] = pod(f)
	}
	return tasks
}

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
		files = append(files, t.Manifest.File)
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

func schemaGVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

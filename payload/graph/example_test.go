package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

// step is an Item: a step of a deployment, in a run level and a component of its own.
type step struct {
	name  string
	level int
	needs []string
}

func (s step) String() string         { return s.name }
func (s step) Place() graph.Place     { return graph.Place{RunLevel: s.level, Component: s.name} }
func (s step) Ref() string            { return s.name }
func (s step) Dependencies() []string { return s.needs }

// Run calls its function with the tasks of every node once the nodes the node depends
// on have succeeded: a failed node stops its dependents only.
func ExampleRun() {
	tasks := graph.NewTasks([]graph.Item{
		step{name: "database", level: 10},
		step{name: "cache", level: 10},
		step{name: "api", level: 20},
		step{name: "web", level: 20, needs: []string{"api"}},
	})
	g, err := graph.Build(tasks, graph.OrderParallel)
	if err != nil {
		fmt.Println(err)
		return
	}
	errs := graph.Run(context.Background(), g, graph.Options{Workers: 1}, func(_ context.Context, tasks []*graph.Task) error {
		for _, t := range tasks {
			if t.Item.String() == "api" {
				return fmt.Errorf("%s: not ready", t)
			}
			fmt.Println("ran", t)
		}
		return nil
	})
	fmt.Println(errs)
	// Output:
	// ran database (1 of 4)
	// ran cache (2 of 4)
	// [api (3 of 4): not ready]
}

// Build arranges the manifests of a payload: run levels in order, the components of a
// level in parallel, a Job as a barrier.
func ExampleBuild() {
	manifests, err := manifest.Load(fstest.MapFS{
		"0000_10_config_00_ns.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: config\n")},
		"0000_20_api_00_cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\n  namespace: config\n")},
		"0000_20_web_00_cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: config\n")},
		"0000_30_migrate_00_job.yaml": {Data: []byte(
			"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: config\n")},
		"0000_40_web_00_svc.yaml": {Data: []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: config\n")},
	}, manifest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := graph.Build(manifest.Tasks(manifests), graph.OrderRunLevels)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	// Output:
	// node 1: 0 tasks
	// node 3: 10-config, 1 task, after 1
	//   0000_10_config_00_ns.yaml namespace "config" (1 of 5)
	// node 4: 20-api, 1 task, after 3
	//   0000_20_api_00_cm.yaml configmap "config/api" (2 of 5)
	// node 5: 20-web, 1 task, after 3
	//   0000_20_web_00_cm.yaml configmap "config/web" (3 of 5)
	// node 6: 0 tasks, after 4, 5
	// node 0: 30-migrate, 1 task, after 6
	//   0000_30_migrate_00_job.yaml job "config/migrate" (4 of 5)
	// node 2: 40-web, 1 task, after 0
	//   0000_40_web_00_svc.yaml service "config/web" (5 of 5)
}

// A dependency against the run levels closes a cycle in every order.
func ExampleCycleError() {
	tasks := graph.NewTasks([]graph.Item{
		step{name: "database", level: 10, needs: []string{"web"}},
		step{name: "web", level: 20},
	})
	_, err := graph.Build(tasks, graph.OrderParallel)
	var cycle *graph.CycleError
	fmt.Println(errors.As(err, &cycle), err)
	// Output: true graph: dependency cycle: database (1 of 2) -> web (2 of 2)
}

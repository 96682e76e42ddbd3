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
	shop := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\n"
	deployment := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n  namespace: shop\n")}
	}
	manifests, err := manifest.Load(fstest.MapFS{
		"0000_10_shop_00_config.yaml":    {Data: []byte(shop)},
		"0000_20_db_00_migrate.yaml":     {Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: shop\n")},
		"0000_30_api_00_deployment.yaml": deployment("api"),
		"0000_30_web_00_deployment.yaml": deployment("web"),
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
	// node 1: 10-shop, 2 tasks
	//   0000_10_shop_00_config.yaml namespace "shop" (1 of 5)
	//   0000_10_shop_00_config.yaml configmap "shop/settings" (2 of 5)
	// node 0: 20-db, 1 task, after 1
	//   0000_20_db_00_migrate.yaml job "shop/migrate" (3 of 5)
	// node 2: 0 tasks, after 0
	// node 3: 30-api, 1 task, after 2
	//   0000_30_api_00_deployment.yaml deployment "shop/api" (4 of 5)
	// node 4: 30-web, 1 task, after 2
	//   0000_30_web_00_deployment.yaml deployment "shop/web" (5 of 5)
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

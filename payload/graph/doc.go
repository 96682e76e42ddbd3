// Package graph runs tasks as a dependency graph with a bounded pool of goroutines.
//
// A caller wraps what it runs in an Item (manifest.Manifest is one), numbers the items
// with NewTasks, arranges them with Build and runs the graph with Run, whose function
// is called with the tasks of every node once the nodes it depends on have succeeded
// (ExampleRun). String, Mermaid and DOT print a graph as a dry-run plan.
//
// # Building
//
// Build arranges tasks by run level and component (OrderRunLevels, OrderParallel,
// OrderSerial), with barriers (a Job) that nothing before them passes and the items'
// dependencies as edges; BuildShuffled is OrderParallel in an order that changes with
// every pass. A dependency against the run levels or one that closes a cycle is a
// *CycleError, one on an item the tasks lack an *UnknownDependencyError, in every
// order.
//
// # Running
//
// Run runs any graph with exactly Options.Workers goroutines, never one per task. A
// failed node (an error, a panic or runtime.Goexit: a *PanicError) stops its
// dependents only; a run cancelled before its end says what did not run
// (*IncompleteError). LowestIndexFirst is the cluster-version operator's order to the
// node: a dispatcher keeps Workers nodes queued ahead of the workers, the lowest ready
// index first, started in the order queued. CriticalPathFirst starts the ready node
// with the most tasks left on its longest path. On the recorded OpenShift 4.15 install
// graph (862 manifests, 74 components, a 74-manifest critical path), scheduled in
// simulated time, CriticalPathFirst ends within 1.01× of the lower bound max(N·L/w,
// critical path·L) at every pool of 1 to 16 workers, where LowestIndexFirst reaches
// 1.43× at 12 and 1.30× at 16 (BenchmarkInstallSchedule). Workers claim queued nodes
// with one atomic operation each and take a lock only to queue more, to finish a node
// with dependents or a failure, and to wait, in the schedule's order to the node: a run
// costs a claim per node and a heap operation per node with dependents plus its
// edges, with a constant number of allocations (BenchmarkRunGraph).
package graph

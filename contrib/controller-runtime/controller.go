package crconverge

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
)

// watch is one of a configured controller's watches beside its own kind:
// the objects of a kind, the handler that turns their events into requests,
// and the predicates that filter them.
type watch struct {
	object     client.Object
	handler    handler.EventHandler
	predicates []predicate.Predicate
}

// blueprint is what a configured controller hands controller-runtime's
// builder: its name, its own kind, its other watches and sources, and the
// controller's options.
type blueprint struct {
	name          string
	forObject     client.Object
	forPredicates []predicate.Predicate
	watches       []watch
	sources       []source.Source
	options       controller.Options
}

// build registers a controller of b running r with mgr and returns it.
func (b blueprint) build(mgr manager.Manager, r reconcile.Reconciler) (controller.Controller, error) {
	bld := builder.ControllerManagedBy(mgr).Named(b.name).WithOptions(b.options).
		For(b.forObject, builder.WithPredicates(b.forPredicates...))
	for _, w := range b.watches {
		bld = bld.Watches(w.object, w.handler, builder.WithPredicates(w.predicates...))
	}
	for _, s := range b.sources {
		bld = bld.WatchesRawSource(s)
	}
	c, err := bld.Build(r)
	if err != nil {
		return nil, fmt.Errorf("crconverge: building the %s controller: %w", b.name, err)
	}
	return c, nil
}

// common holds the options every configured controller takes, checked and
// defaulted.
type common[O client.Object] struct {
	kind     kind[O]
	name     string
	recorder events.EventRecorder
}

// checkCommon checks a configured controller's manager, resource prototype,
// recorder and controller options, and returns them with their defaults
// (the name is the lower-case kind, the recorder the manager's, named
// "<name>-controller") and what is wrong with them.
func checkCommon[O client.Object](mgr manager.Manager, prototype O, name string, rec events.EventRecorder,
	opts controller.Options) (common[O], []string) {
	var problems []string
	if check.IsNil(mgr) {
		problems = append(problems, "nil manager")
	}
	if check.IsNil(prototype) {
		problems = append(problems, "nil For")
	}
	if rec != nil && check.IsNil(rec) {
		problems = append(problems, fmt.Sprintf("Recorder holds a nil %T", rec))
	}
	if opts.Reconciler != nil {
		problems = append(problems, "Options.Reconciler is the controller's own")
	}
	if len(problems) > 0 {
		return common[O]{}, problems
	}
	k, err := kindOf(mgr.GetScheme(), prototype)
	if err != nil {
		return common[O]{}, []string{"For: " + err.Error()}
	}
	c := common[O]{kind: k, name: name, recorder: rec}
	if c.name == "" {
		c.name = k.defaultName()
	}
	if c.recorder == nil {
		c.recorder = mgr.GetEventRecorder(c.name + "-controller")
	}
	return c, nil
}

// result maps an engine's pass to what the reconciler returns: Result's
// mapping, except that bad input (the resource's policy or spec, or a status
// the engine refuses) is a terminal error, not retried until the resource
// changes.
func result(requeueAfter time.Duration, err error) (reconcile.Result, error) {
	if errors.Is(err, converge.ErrInvalid) {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	return Result(requeueAfter, err)
}

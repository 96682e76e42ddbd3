package testenv

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/converge-dev/converge"
)

// FaultClass names a kind of fault a FaultProxy injects. FaultClasses is
// the closed list.
type FaultClass string

// The fault classes. Each applies to the verbs its comment names; a Fault
// of the class with no Verbs applies to all of them.
const (
	// Conflict answers an update, patch or delete with 409 Conflict ("the
	// object has been modified"), without passing it on.
	Conflict FaultClass = "Conflict"
	// TooManyRequests answers any request with 429 and a Retry-After of
	// Fault.Delay (1s when zero, rounded up to whole seconds), without
	// passing it on. client-go waits and retries such an answer by itself,
	// up to ten times.
	TooManyRequests FaultClass = "TooManyRequests"
	// InternalError answers any request with 500, without passing it on.
	InternalError FaultClass = "InternalError"
	// TimeoutAfterCommit passes a create, update, patch, delete or
	// deletecollection on and, once the apiserver has committed it,
	// answers 504 Timeout instead of the apiserver's answer: the change
	// happened and the client saw an error. A request the apiserver
	// refused gets its refusal, and the fault is not counted.
	TimeoutAfterCommit FaultClass = "TimeoutAfterCommit"
	// Latency holds any request for Fault.Delay before passing it on.
	Latency FaultClass = "Latency"
	// WatchClose ends a watch after a number of changes (events but
	// bookmarks) drawn from 1..Fault.Events (1 when zero), as an
	// apiserver ends a watch at its timeout or a connection drops; an
	// idle watch stays open.
	WatchClose FaultClass = "WatchClose"
	// WatchDelay delivers every event of a watch Fault.Delay after it
	// arrived, in order.
	WatchDelay FaultClass = "WatchDelay"
	// WatchGone answers a watch that resumes from a resource version with
	// the 410 Gone ("too old resource version") an apiserver sends when
	// that version was compacted away, which makes an informer list
	// again. A watch from no version, from "0" or with sendInitialEvents
	// never gets it, as from a real apiserver.
	WatchGone FaultClass = "WatchGone"
	// StaleView serves gets, lists and watches from a view of the cluster
	// that lags by Fault.Lag or by Fault.LagEvents events (Sieve's time
	// travel). Only what a real apiserver may serve stale is: see
	// FaultProxy for which reads those are and how far back a view goes.
	StaleView FaultClass = "StaleView"
	// Crash passes a create, update, patch, delete or deletecollection on
	// and, once it is answered, cuts its identity off, as
	// FaultProxy.CrashAfter does. FaultProxy.Counts counts under Crash
	// every instance cut off, by either.
	Crash FaultClass = "Crash"
)

// FaultClasses returns every fault class, in the order of their
// declaration.
func FaultClasses() []FaultClass {
	return []FaultClass{Conflict, TooManyRequests, InternalError, TimeoutAfterCommit, Latency,
		WatchClose, WatchDelay, WatchGone, StaleView, Crash}
}

// The verbs of API requests, as RBAC names them.
var (
	readVerbs     = []string{"get", "list", "watch"}
	mutatingVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
	allVerbs      = append(slices.Clone(readVerbs), mutatingVerbs...)
)

// classVerbs are the verbs each class applies to.
var classVerbs = map[FaultClass][]string{
	Conflict:           {"update", "patch", "delete"},
	TooManyRequests:    allVerbs,
	InternalError:      allVerbs,
	TimeoutAfterCommit: mutatingVerbs,
	Latency:            allVerbs,
	WatchClose:         {"watch"},
	WatchDelay:         {"watch"},
	WatchGone:          {"watch"},
	StaleView:          readVerbs,
	Crash:              mutatingVerbs,
}

// Fault is one rule of a FaultPlan: which requests it selects, how often
// it strikes one of them, and with what. A selector field left empty
// selects everything; one that is set selects the requests whose value is
// in it.
type Fault struct {
	// Class is the fault injected.
	Class FaultClass
	// Verbs select by verb: get, list, watch, create, update, patch,
	// delete, deletecollection; only those of the class are allowed.
	Verbs []string
	// Resources select by resource, in the plural the API's paths use,
	// whatever its group: "configmaps" selects a ConfigMap and its
	// subresources, "deployments/status" only that subresource.
	Resources []string
	// Namespaces select by namespace; a cluster-wide request has none.
	Namespaces []string
	// Names select by the object a request names in its path (get,
	// update, patch, delete) or in a metadata.name field selector (list,
	// watch); a create names none.
	Names []string
	// Percent is the chance, 1 to 100, that a selected request gets the
	// fault.
	Percent int
	// Delay is how long Latency holds a request and WatchDelay an event,
	// and the Retry-After of TooManyRequests.
	Delay time.Duration
	// Events bounds the number of changes after which WatchClose ends a
	// watch.
	Events int
	// Lag is how far behind a StaleView is in time; LagEvents, in changes:
	// those of the request's namespace (of the cluster for a cluster-wide
	// request) for a get or list, those of its own stream for a watch. Set
	// one of the two.
	Lag       time.Duration
	LagEvents int
}

// FaultPlan is the faults a FaultProxy injects, replayed by its seed.
//
// Whether the k-th request of an identity that a fault selects gets it is a
// function of Seed, the identity, the fault's index and k, not of timing:
// the same plan injects the same faults into the same sequence of requests.
// A request gets one fault at most, that of the first fault in Faults that
// strikes it; every fault that selects it counts it.
type FaultPlan struct {
	// Seed replays the plan.
	Seed uint64
	// Faults are the rules, in order.
	Faults []Fault
}

// Validate returns an error matching converge.ErrInvalid that names every
// problem of the plan ("testenv: invalid fault plan: faults[0]: Percent 0
// is not in 1..100"), or nil.
func (p FaultPlan) Validate() error {
	var problems []string
	for i, f := range p.Faults {
		for _, problem := range f.problems() {
			problems = append(problems, fmt.Sprintf("faults[%d]: %s", i, problem))
		}
	}
	return converge.Invalid("testenv", "fault plan", problems...)
}

// problems returns what is wrong with the fault.
func (f Fault) problems() []string {
	verbs, ok := classVerbs[f.Class]
	if !ok {
		return []string{fmt.Sprintf("unknown Class %q (one of %s)", f.Class, joinClasses(FaultClasses()))}
	}
	var problems []string
	if f.Percent < 1 || f.Percent > 100 {
		problems = append(problems, fmt.Sprintf("Percent %d is not in 1..100", f.Percent))
	}
	for _, v := range f.Verbs {
		if !slices.Contains(verbs, v) {
			problems = append(problems, fmt.Sprintf("%s does not apply to verb %q (only to %s)", f.Class, v, strings.Join(verbs, ", ")))
		}
	}
	for _, r := range f.Resources {
		if res, sub, _ := strings.Cut(r, "/"); res == "" || strings.Contains(sub, "/") || (sub == "" && strings.HasSuffix(r, "/")) {
			problems = append(problems, fmt.Sprintf("Resources: %q is not resource or resource/subresource", r))
		}
	}
	if slices.Contains(f.Namespaces, "") {
		problems = append(problems, "Namespaces holds an empty name")
	}
	if slices.Contains(f.Names, "") {
		problems = append(problems, "Names holds an empty name")
	}
	return append(problems, f.parameterProblems()...)
}

// parameterProblems returns what is wrong with the fault's parameters:
// each class takes its own, and a parameter of another class is a mistake.
func (f Fault) parameterProblems() []string {
	var problems []string
	if f.Delay < 0 || f.Lag < 0 || f.Events < 0 || f.LagEvents < 0 {
		problems = append(problems, "Delay, Events, Lag and LagEvents cannot be negative")
	}
	switch f.Class {
	case Latency, WatchDelay:
		if f.Delay <= 0 {
			problems = append(problems, fmt.Sprintf("%s needs a Delay", f.Class))
		}
	case StaleView:
		if (f.Lag > 0) == (f.LagEvents > 0) {
			problems = append(problems, "StaleView needs one of Lag and LagEvents")
		}
	}
	takes := map[string]bool{
		"Delay":     f.Class == Latency || f.Class == WatchDelay || f.Class == TooManyRequests,
		"Events":    f.Class == WatchClose,
		"Lag":       f.Class == StaleView,
		"LagEvents": f.Class == StaleView,
	}
	set := map[string]bool{"Delay": f.Delay != 0, "Events": f.Events != 0, "Lag": f.Lag != 0, "LagEvents": f.LagEvents != 0}
	for _, name := range []string{"Delay", "Events", "Lag", "LagEvents"} {
		if set[name] && !takes[name] {
			problems = append(problems, fmt.Sprintf("%s takes no %s", f.Class, name))
		}
	}
	return problems
}

func joinClasses(classes []FaultClass) string {
	names := make([]string, len(classes))
	for i, c := range classes {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

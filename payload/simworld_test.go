package payload_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// The simulated releases. Two share version 1.1.0 and differ by digest: the same
// objects with other contents, so that a host call says which release it is for by
// the digest its manifest carries; a release is also served by a mirror (pick).
var simReleases = []payload.Release{
	{Version: "1.0.0", Image: "registry.example/release@sha256:aaaa"},
	{Version: "1.1.0", Image: "registry.example/release@sha256:bbbb"},
	{Version: "1.2.0", Image: "registry.example/release@sha256:cccc"},
	{Version: "1.1.0", Image: "registry.example/release@sha256:dddd"},
}

const (
	simVersionAnnotation = "sim.converge.dev/version"
	simDigestAnnotation  = "sim.converge.dev/digest"
)

// simID is what makes a simulated release itself: its digest, whatever registry
// serves it.
func simID(r payload.Release) string {
	_, digest, _ := strings.Cut(r.Image, "@")
	return digest
}

// simPayload is eleven manifests over four run levels and three components: a removal,
// a dependency across components and a Job, which nothing passes. Every object is
// named after the release's version and carries its digest.
func simPayload(r payload.Release) *payload.Payload {
	v := r.Version
	m := func(file, kind, namespace, name string, deps ...string) manifest.Manifest {
		mf := newManifest(file, kind, namespace, name+"-"+v, deps...)
		mf.Object.SetAnnotations(map[string]string{simVersionAnnotation: v, simDigestAnnotation: simID(r)})
		return mf
	}
	p := &payload.Payload{Release: r, Manifests: []manifest.Manifest{
		m("0000_10_a_00_ns.yaml", "Namespace", "", "a"),
		m("0000_10_b_00_ns.yaml", "Namespace", "", "b"),
		m("0000_10_c_00_ns.yaml", "Namespace", "", "c"),
		m("0000_20_a_00_cm.yaml", "ConfigMap", "a", "one"),
		m("0000_20_a_01_old.yaml", "ConfigMap", "a", "old"),
		m("0000_20_b_00_cm.yaml", "ConfigMap", "b", "one", "ConfigMap/a/one-"+v),
		m("0000_20_c_00_cm.yaml", "ConfigMap", "c", "one"),
		m("0000_25_a_00_job.yaml", "Job", "a", "migrate"),
		m("0000_30_a_00_cm.yaml", "ConfigMap", "a", "two"),
		m("0000_30_b_00_cm.yaml", "ConfigMap", "b", "two"),
		m("0000_30_c_00_cm.yaml", "ConfigMap", "c", "two"),
	}}
	p.Manifests[4].Delete = true
	p.Manifests[7].GVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	return p
}

// simObject is what the simulator knows of a manifest of a release.
type simObject struct {
	ref, id string
	delete  bool
}

// simObjectsCache holds simObjects of every version.
var simObjectsCache sync.Map

// simObjectsOf returns the objects of the releases of version, in apply order.
func simObjectsOf(version string) []simObject {
	if objs, ok := simObjectsCache.Load(version); ok {
		return objs.([]simObject)
	}
	var objs []simObject
	for _, m := range simPayload(payload.Release{Version: version}).Manifests {
		objs = append(objs, simObject{ref: m.Ref(), id: idOf(&m), delete: m.Delete})
	}
	simObjectsCache.Store(version, objs)
	return objs
}

// simDeps returns, for every manifest of p applied in state, the manifests that must
// have ended well in the same apply before it starts: the files before it of its
// component and run level, every lower run level when updating, every manifest before
// a Job and the Job before every manifest after it, and its depends-on references.
func simDeps(p *payload.Payload, state payload.State) map[string][]string {
	deps := map[string][]string{}
	isJob := func(m manifest.Manifest) bool { return m.GVK.Kind == "Job" }
	for i, m := range p.Manifests {
		level, component, _ := manifest.ParseRunLevel(m.File)
		for _, o := range p.Manifests[:i] {
			l, c, _ := manifest.ParseRunLevel(o.File)
			if (l == level && c == component) || (state == payload.StateUpdating && l < level) || isJob(m) || isJob(o) {
				deps[m.Ref()] = append(deps[m.Ref()], o.Ref())
			}
		}
		deps[m.Ref()] = append(deps[m.Ref()], m.DependsOn...)
	}
	return deps
}

// simDepsCache holds simDeps of every version and state.
var simDepsCache sync.Map

func simDepsOf(version string, state payload.State) map[string][]string {
	key := version + "/" + string(state)
	if deps, ok := simDepsCache.Load(key); ok {
		return deps.(map[string][]string)
	}
	deps := simDeps(simPayload(payload.Release{Version: version}), state)
	simDepsCache.Store(key, deps)
	return deps
}

// simPolicy: pools of three sizes, so that each state's bound shows, readiness polled
// and bounded, manifests tried twice, the defaults' backoffs.
var simPolicy = payload.Policy{
	Interval:            metav1.Duration{Duration: time.Minute},
	ApplyTimeout:        metav1.Duration{Duration: 5 * time.Minute},
	ManifestAttempts:    2,
	Workers:             2,
	InitializingWorkers: 3,
	ReconcileWorkers:    1,
	ReadinessPoll:       metav1.Duration{Duration: 5 * time.Second},
	ReadinessTimeout:    metav1.Duration{Duration: 20 * time.Second},
}

// simPools is the pool of each state, as simPolicy says.
var simPools = map[payload.State]int{payload.StateInitializing: 3, payload.StateUpdating: 2, payload.StateReconciling: 1}

// simBackoff is the backoff simPolicy means: Interval/8, doubling up to Interval, up to
// 20 % jitter.
var simBackoff = converge.Backoff{Initial: metav1.Duration{Duration: simPolicy.Interval.Duration / 8}, Max: simPolicy.Interval,
	FactorPercent: 200, JitterPercent: ptr.To[int32](20)}

// simWait is the shortest and the longest wait after an apply that left st: the
// backoff without and with the most jitter after a failure, the interval after a
// completion.
func simWait(st payload.Status) (shortest, longest time.Duration) {
	if st.Failures > 0 {
		return simBackoff.Delay(st.Failures, 0), simBackoff.Delay(st.Failures, 1)
	}
	return simPolicy.Interval.Duration, simPolicy.Interval.Duration
}

// simVerdict is how the world answers a host call.
type simVerdict int

const (
	verdictOK          simVerdict = iota
	verdictFail                   // an error the applier retries
	verdictReport                 // an error of EffectReport
	verdictHang                   // the call ignores its context until the simulator answers again
	verdictPanic                  // the call panics
	verdictGoexit                 // the call calls runtime.Goexit
	verdictNotReady               // a readiness check that finds the object not ready
	verdictUnknownKind            // the kind has no resource on the server
	verdictCancelled              // the call returns its context's error, as a call that honours it does
	verdictNotFound               // a delete that finds the object gone
)

var verdictNames = map[simVerdict]string{verdictOK: "ok", verdictFail: "fail", verdictReport: "report", verdictHang: "hang", verdictPanic: "panic",
	verdictGoexit: "goexit", verdictNotReady: "not ready", verdictUnknownKind: "unknown kind", verdictCancelled: "cancelled", verdictNotFound: "not found"}

// failed reports whether a call answered v failed, as the world's ledger counts it.
func (v simVerdict) failed() bool { return v != verdictOK && v != verdictNotFound && v != verdictHang }

// simCall is a host call waiting for the world's answer.
type simCall struct {
	kind    string // load, check, apply, delete, ready, result
	release string // simID of the release the call is for
	version string
	ref     string
	id      string // "configmap \"a/one-1.0.0\"", as the worker's messages name the object
	state   payload.State
	ctx     context.Context
	result  converge.Result
	status  payload.Status // the status the decision made, for a result
	epoch   int            // the worker the call comes from
	hung    bool
	dead    bool // made once its process had crashed: it never reaches the world
	seen    bool // the simulator has taken the call in
	reply   chan simVerdict
}

func (c *simCall) key() string { return c.kind + " " + c.version + " " + c.release + " " + c.ref }

func (c *simCall) task() bool { return c.kind == "apply" || c.kind == "delete" || c.kind == "ready" }

// marker is what the worker's message of a failure of c names: the object, or what
// the load or the preconditions met.
func (c *simCall) marker() string {
	switch c.kind {
	case "load":
		return "the registry"
	case "check":
		return "the preconditions"
	}
	return c.ref
}

// act plays a verdict in the host call that got it.
func act(ctx context.Context, v simVerdict, what string) error {
	switch v {
	case verdictFail:
		return errors.New("apiserver refused " + what)
	case verdictReport:
		return &payload.UpdateError{Reason: "Slow", Message: what + " is slow", Effect: payload.EffectReport}
	case verdictPanic:
		panic("host bug on " + what)
	case verdictGoexit:
		runtime.Goexit()
	case verdictUnknownKind:
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, SearchedVersions: []string{"v1"}}
	case verdictCancelled:
		return ctx.Err()
	case verdictNotFound:
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, what)
	}
	return nil
}

func versionOf(m *manifest.Manifest) string { return m.Object.GetAnnotations()[simVersionAnnotation] }

func digestOf(m *manifest.Manifest) string { return m.Object.GetAnnotations()[simDigestAnnotation] }

// idOf names m's object as the worker's events do.
func idOf(m *manifest.Manifest) string {
	return fmt.Sprintf("%s %q", strings.ToLower(m.GVK.Kind), m.Namespace()+"/"+m.Name())
}

// config returns the hooks of the worker of epoch: every host call asks the simulator.
func (s *sim) config(epoch int, w **payload.Worker, clk *offsetClock) payload.Config {
	state := func() payload.State { return (*w).Status().State }
	task := func(ctx context.Context, kind string, m *manifest.Manifest, st payload.State) simVerdict {
		return s.call(&simCall{kind: kind, release: digestOf(m), version: versionOf(m), ref: m.Ref(), id: idOf(m), state: st, ctx: ctx, epoch: epoch})
	}
	return payload.Config{
		Loader: payload.LoaderFunc(func(ctx context.Context, r payload.Release) (*payload.Payload, error) {
			if v := s.call(&simCall{kind: "load", release: simID(r), version: r.Version, ctx: ctx, epoch: epoch}); v != verdictOK {
				return nil, act(ctx, v, "the registry")
			}
			return simPayload(r), nil
		}),
		Preconditions: payload.PreconditionsFunc(func(ctx context.Context, _, to payload.Release) error {
			if v := s.call(&simCall{kind: "check", release: simID(to), version: to.Version, ctx: ctx, epoch: epoch}); v != verdictOK {
				return fmt.Errorf("not upgradeable: %w", act(ctx, v, "the preconditions"))
			}
			return nil
		}),
		Applier: payload.ApplierFunc(func(ctx context.Context, m *manifest.Manifest, st payload.State) error {
			return act(ctx, task(ctx, "apply", m, st), m.Ref())
		}),
		Deleter: payload.DeleterFunc(func(ctx context.Context, m *manifest.Manifest) error {
			return act(ctx, task(ctx, "delete", m, state()), m.Ref())
		}),
		Readiness: payload.ReadinessFunc(func(ctx context.Context, m *manifest.Manifest) error {
			switch v := task(ctx, "ready", m, state()); v {
			case verdictNotReady:
				return errors.New(m.Ref() + " is not ready")
			case verdictFail:
				return &payload.UpdateError{Reason: "Degraded", Message: m.Ref() + " is degraded", Effect: payload.EffectFail}
			default:
				return act(ctx, v, m.Ref())
			}
		}),
		StatusWriter: payload.StatusWriterFunc(func(_ context.Context, st payload.Status) error { return s.write(epoch, st) }),
		OnResult: func(r converge.Result) {
			s.call(&simCall{kind: "result", result: r, status: (*w).Status(), epoch: epoch})
		},
		Clock:  clk,
		Policy: s.policy(),
		Jitter: s.jitter.Float64,
	}
}

// verdict is the world's answer to c: while faults last, any failure a host call can
// meet; after, success, but for readiness checks, which find an object not ready at
// times.
func (s *sim) verdict(c *simCall) simVerdict {
	if !s.faults {
		if c.kind == "ready" && s.rng.IntN(4) == 0 {
			return verdictNotReady
		}
		return verdictOK
	}
	r := s.rng.IntN(100)
	switch c.kind {
	case "apply", "delete":
		switch {
		case r < 8:
			return verdictFail
		case r < 10:
			return verdictReport
		case r < 14:
			return verdictHang
		case r < 16:
			return verdictPanic
		case r < 18:
			return verdictGoexit
		case r < 20 && c.kind == "apply":
			return verdictUnknownKind
		}
	case "ready":
		switch {
		case r < 15:
			return verdictNotReady
		case r < 18:
			return verdictFail
		case r < 20:
			return verdictHang
		}
	case "load", "check":
		if r < 12 {
			return verdictFail
		}
	}
	return verdictOK
}

// pick is a release the host may want: any, forced or not, through a mirror or not.
func (s *sim) pick() payload.Release {
	r := simReleases[s.rng.IntN(len(simReleases))]
	r.Force = s.rng.IntN(4) == 0
	if s.rng.IntN(5) == 0 { // the same release through a mirror
		r.Image = strings.Replace(r.Image, "registry.example", "mirror.example", 1)
	}
	return r
}

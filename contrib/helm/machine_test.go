package helmconverge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
	"github.com/converge-dev/converge/fake"
)

// logBuffer is a logger that keeps every line, at every verbosity.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) context() context.Context {
	log := funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	return klog.NewContext(context.Background(), log)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// machine drives the add-on through addon.Machine on the world.
type machine struct {
	t      *testing.T
	w      *world
	clock  *clocktesting.FakeClock
	store  *fake.AddonStore
	m      *addon.Machine
	events []converge.Event
	logs   logBuffer
}

func newMachine(t *testing.T, w *world, policy addon.Policy, version string) *machine {
	t.Helper()
	h := &machine{t: t, w: w, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)), store: &fake.AddonStore{}}
	spec := name
	spec.Version = version
	h.store.Put(addon.Object{Spec: spec})
	m, err := addon.NewMachine(addon.Config{Driver: w.driver, Store: h.store, Owner: "test", Policy: policy, Clock: h.clock, Jitter: func() float64 { return 0 }})
	require.NoError(t, err)
	h.m = m
	return h
}

func (h *machine) status() addon.Status {
	obj, err := h.store.Get(context.Background(), name.Name)
	require.NoError(h.t, err)
	return obj.Status
}

// run reconciles n times, waiting as each result asks.
func (h *machine) run(n int) {
	h.t.Helper()
	for range n {
		obj, err := h.store.Get(context.Background(), name.Name)
		require.NoError(h.t, err)
		res, err := h.m.Reconcile(h.logs.context(), obj)
		require.NoError(h.t, err)
		h.events = append(h.events, res.Events...)
		if res.RequeueAfter > 0 {
			h.clock.Step(res.RequeueAfter)
		}
	}
}

// TestSecretValuesNeverReachStatusEventsOrLogs: a chart whose error quotes
// a password from its values fails the install; the failure is in the
// status, the events and the log, the password in none of them.
func TestSecretValuesNeverReachStatusEventsOrLogs(t *testing.T) {
	const secret = "hunter2"
	w := newWorld(t, helmconverge.Config{})
	v := w.version(map[string]any{"password": secret})
	h := newMachine(t, w, addon.Policy{MaxRetries: ptr[int32](1)}, v)
	h.run(6)

	st := h.status()
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "is shorter than 8 characters", "the chart's error reached the status")
	assert.NotContains(t, string(raw), secret)
	events := fmt.Sprint(h.events)
	assert.Contains(t, events, "is shorter than 8 characters")
	assert.NotContains(t, events, secret)
	logs := h.logs.String()
	assert.Contains(t, logs, "is shorter than 8 characters", "the failure was logged")
	assert.NotContains(t, logs, secret)
}

// TestMachineDrivesTheReleaseToRunning: the engine installs, waits for the
// Deployment through Health (no --wait), runs the chart's tests, and
// records the Helm revision that carries the version.
func TestMachineDrivesTheReleaseToRunning(t *testing.T) {
	w := newWorld(t, helmconverge.Config{})
	v1 := w.version(nil)
	h := newMachine(t, w, addon.Policy{Test: addon.TestPolicy{Enable: true}}, v1)
	h.run(2)
	assert.Equal(t, addon.PhaseChecking, h.status().Phase, "the Deployment has not rolled out")
	w.rollOut()
	h.run(2)
	st := h.status()
	assert.Equal(t, addon.PhaseRunning, st.Phase, st.Message)
	assert.Equal(t, "1", st.InstalledRevision)
	assert.Equal(t, "1", st.LastGoodRevision)
}

func ptr[T any](v T) *T { return &v }

// TestRuleReadyNamesAMissingRollbackRevision: when Helm no longer has a
// revision that carries the last good version, the rollback after a failed
// upgrade fails with ErrRollbackTargetMissing, and the add-on stops in
// Failed with Ready (not only Stalled) saying so.
func TestRuleReadyNamesAMissingRollbackRevision(t *testing.T) {
	w := newWorld(t, helmconverge.Config{})
	v1, bad := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2, "failHook": true})
	h := newMachine(t, w, addon.Policy{MaxRetries: ptr[int32](1)}, v1)
	h.run(1)
	w.rollOut()
	h.run(2)
	require.Equal(t, addon.PhaseRunning, h.status().Phase, h.status().Message)
	require.Equal(t, "1", h.status().LastGoodRevision)

	_, ok := h.store.Update(name.Name, func(s *addon.Spec) { s.Generation, s.Version = 2, bad })
	require.True(t, ok)
	h.run(1)
	require.Equal(t, addon.PhaseRemediating, h.status().Phase, h.status().Message)
	require.Equal(t, []string{"deployed", "failed"}, w.statuses())

	// Revision 1, the only one that carried v1, is gone from Helm's storage.
	cfg, err := w.cluster.Helm("tke", "tke", nil)
	require.NoError(t, err)
	_, err = cfg.Releases.Delete("mesh", 1)
	require.NoError(t, err)
	h.run(3)

	st := h.status()
	require.Equal(t, addon.PhaseFailed, st.Phase, st.Message)
	missing := helmconverge.ErrRollbackTargetMissing.Error()
	for _, typ := range []string{conditions.TypeReady, conditions.TypeStalled} {
		c := meta.FindStatusCondition(st.Conditions, typ)
		require.NotNil(t, c, typ)
		assert.Equal(t, string(addon.TriggerRollbackFailed), c.Reason, typ)
		assert.Contains(t, c.Message, missing, typ)
	}
	ready := meta.FindStatusCondition(st.Conditions, conditions.TypeReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	t.Logf("Ready: %s: %s", ready.Reason, ready.Message)
}

package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// errCrash is what every host call returns once the simulated process died.
var errCrash = errors.New("simulated crash")

// simHost wraps the fakes as the process sees its host: after crashAfter
// more host calls (any call: reads, writes, creates, deletes) the process
// dies, and every later host call of that sync fails until the next
// restart, a fresh Controller. It persists each status as an API server
// does, through encoding/json of rollout.Status (codec), on every write
// and every read. It counts the installer calls of a sync, records the
// creates the host refused and the installer pods a read showed.
type simHost struct {
	*fake.RolloutCluster
	store      *fake.RolloutStatusStore
	codec      func(rollout.Status) rollout.Status
	read       rollout.Status // the last version read, as decoded
	readRV     string
	crashAfter int // -1: no crash pending
	dead       bool
	acted      int                 // EnsureInstaller and DeleteInstaller calls
	refused    []rollout.Installer // the creates the host refused, not yet in the ledger
	shown      map[string]bool     // the installer pods a sync was shown and lived to record
	showing    []string            // the installer pods this sync was shown
	fallbacks  []shownFallback     // the fallbacks a host call showed the engine, not yet in the ledger
}

// call is the start of a host call: it fails once the process died.
func (h *simHost) call() error {
	if h.dead {
		return errCrash
	}
	return nil
}

// done is the end of a host call: the process dies after the last one it
// was to make.
func (h *simHost) done() {
	if h.crashAfter >= 0 {
		h.dead = h.crashAfter == 0
		h.crashAfter--
	}
}

func (h *simHost) ListNodes(ctx context.Context) ([]rollout.Node, error) {
	if err := h.call(); err != nil {
		return nil, err
	}
	defer h.done()
	return h.RolloutCluster.ListNodes(ctx)
}

func (h *simHost) GetOperands(ctx context.Context, nodes []string, operands []rollout.OperandState) error {
	if err := h.call(); err != nil {
		return err
	}
	defer h.done()
	err := h.RolloutCluster.GetOperands(ctx, nodes, operands)
	for i, op := range operands {
		if err == nil && op.Fallback != nil {
			h.fallbacks = append(h.fallbacks, shownFallback{nodes[i], op.Fallback})
		}
	}
	return err
}

// shownFallback is a startup monitor's fallback a read showed the engine.
type shownFallback struct {
	node string
	pod  *rollout.OperandFallback
}

func (h *simHost) GetInstaller(ctx context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	if err := h.call(); err != nil {
		return rollout.InstallerState{}, err
	}
	defer h.done()
	st, err := h.RolloutCluster.GetInstaller(ctx, inst)
	if err == nil && st.Phase != rollout.InstallerNotFound {
		h.showing = append(h.showing, inst.Name)
	}
	return st, err
}

func (h *simHost) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	if err := h.call(); err != nil {
		return rollout.Status{}, "", err
	}
	defer h.done()
	st, rv, err := h.store.GetStatus(ctx)
	if err != nil {
		return st, rv, err
	}
	if rv != h.readRV { // a version decoded once: JSON gives the same back each time
		h.read, h.readRV = h.codec(st), rv
	}
	return *h.read.DeepCopy(), rv, nil
}

func (h *simHost) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	if err := h.call(); err != nil {
		return "", err
	}
	defer h.done()
	stored := h.codec(st)
	rv, err := h.store.UpdateStatus(ctx, stored, rv)
	if err == nil {
		h.read, h.readRV = stored, rv // what a read of this version decodes
		h.saw()
	}
	return rv, err
}

// saw records the installers the sync was shown as seen: its status write
// landed, or it needed none. A process that dies first saw nothing it
// could keep.
func (h *simHost) saw() {
	for _, name := range h.showing {
		h.shown[name] = true
	}
	h.showing = h.showing[:0]
}

func (h *simHost) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	if err := h.call(); err != nil {
		return err
	}
	defer h.done()
	h.acted++
	err := h.RolloutCluster.EnsureInstaller(ctx, inst)
	if err != nil {
		h.refused = append(h.refused, inst)
	}
	return err
}

func (h *simHost) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	if err := h.call(); err != nil {
		return err
	}
	defer h.done()
	h.acted++
	return h.RolloutCluster.DeleteInstaller(ctx, inst)
}

// partCodec is a status as an API server stores it and serves it back,
// through encoding/json, at the cost of what changed: each node status,
// condition and hold, and the rest of the status, is encoded on its own, and a part whose encoding the run decoded
// before is served from that decoding instead of being decoded again (most
// writes change a part or two, and parts take the same values again).
type partCodec struct {
	rest  map[string]rollout.Status
	nodes map[string]rollout.NodeStatus
	conds map[string]metav1.Condition
	holds map[string]converge.Hold
}

func newPartCodec() *partCodec {
	return &partCodec{rest: map[string]rollout.Status{}, nodes: map[string]rollout.NodeStatus{},
		conds: map[string]metav1.Condition{}, holds: map[string]converge.Hold{}}
}

func (c *partCodec) roundTrip(st rollout.Status) rollout.Status {
	nodes, conds, holds := st.NodeStatuses, st.Conditions, st.Holds
	st.NodeStatuses, st.Conditions, st.Holds = nil, nil, nil
	var out rollout.Status
	decodeOnce(st, c.rest, &out)
	out.NodeStatuses = decodeEach(nodes, c.nodes)
	out.Conditions = decodeEach(conds, c.conds)
	out.Holds = decodeEach(holds, c.holds)
	return out
}

// decodeEach is decodeOnce of each element; an empty list is nil, as
// encoding/json decodes an omitted one.
func decodeEach[T any, P interface {
	*T
	DeepCopy() *T
}](vs []T, seen map[string]T) []T {
	if len(vs) == 0 {
		return nil
	}
	out := make([]T, len(vs))
	for i, v := range vs {
		decodeOnce[T, P](v, seen, &out[i])
	}
	return out
}

// decodeOnce encodes v and decodes it into out, or copies the decoding
// seen holds for the same encoding, and keeps the decoding there.
func decodeOnce[T any, P interface {
	*T
	DeepCopy() *T
}](v T, seen map[string]T, out *T) {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	d, ok := seen[string(raw)]
	if !ok {
		if err := json.Unmarshal(raw, &d); err != nil {
			panic(err)
		}
		seen[string(raw)] = d
	}
	*out = *P(&d).DeepCopy()
}

// dropping is a codec that loses the JSON field named field of every node
// status, as a CRD whose status schema lacks it loses it.
func dropping(field string) func(rollout.Status) rollout.Status {
	return func(st rollout.Status) rollout.Status {
		raw, err := json.Marshal(st)
		if err != nil {
			panic(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			panic(err)
		}
		nodes, _ := obj["nodeStatuses"].([]any)
		for _, n := range nodes {
			delete(n.(map[string]any), field)
		}
		if raw, err = json.Marshal(obj); err != nil {
			panic(err)
		}
		var out rollout.Status
		if err := json.Unmarshal(raw, &out); err != nil {
			panic(err)
		}
		return out
	}
}

// skewedClock is a replica's clock: the world's, off by a fixed offset.
type skewedClock struct {
	world *clocktesting.FakeClock
	off   time.Duration
}

func (c skewedClock) Now() time.Time                  { return c.world.Now().Add(c.off) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// simGate is a gate that denies the nodes in denied and records what it
// admitted during a sync.
type simGate struct {
	denied   map[string]bool
	admitted map[string]bool // installer names
}

func (g *simGate) Admit(_ context.Context, d rollout.Disruption) error {
	if g.denied[d.Installer.Node] {
		return fmt.Errorf("quorum would be lost without %s", d.Installer.Node)
	}
	if g.admitted == nil {
		g.admitted = map[string]bool{}
	}
	g.admitted[d.Installer.Name] = true
	return nil
}

// TestSimRolloutLosesWhatItsStoreDrops: the simulator's store persists the
// status through encoding/json, so a field the serialization drops (a
// json:"-" or a wrong tag, or in a cluster a CRD whose status schema lacks
// it) is lost in the simulation as on an API server, and the oracles see
// what follows: without installerNotSeen, an installer ordered by a write
// after which the process died reads as seen, and its absence is recorded
// as a failed attempt the world never showed.
func TestSimRolloutLosesWhatItsStoreDrops(t *testing.T) {
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	for seed := uint64(1); seed <= 500; seed++ {
		r, err := newSimRun(seed, false)
		require.NoError(t, err)
		r.host.codec = dropping("installerNotSeen")
		if err := r.run(ctx); err != nil {
			t.Logf("schedule %d: %v", seed, err)
			return
		}
	}
	require.Fail(t, "no schedule noticed the store drop installerNotSeen")
}

package rollout_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// errCrash is what every host call returns once the simulated process died.
var errCrash = errors.New("simulated crash")

// simHost wraps the fakes: after crashAfter more successful status writes
// the process dies, and every host call fails until the next restart. It
// counts the installer calls of a sync.
type simHost struct {
	*fake.RolloutCluster
	store      *fake.RolloutStatusStore
	crashAfter int // -1: no crash pending
	dead       bool
	acted      int                 // EnsureInstaller and DeleteInstaller calls
	refused    []rollout.Installer // the creates the host refused, not yet in the ledger
	shown      map[string]bool     // the installer pods a host call showed the engine
}

func (h *simHost) GetInstaller(ctx context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	if h.dead {
		return rollout.InstallerState{}, errCrash
	}
	st, err := h.RolloutCluster.GetInstaller(ctx, inst)
	if err == nil && st.Phase != rollout.InstallerNotFound {
		h.shown[inst.Name] = true
	}
	return st, err
}

func (h *simHost) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	if h.dead {
		return rollout.Status{}, "", errCrash
	}
	return h.store.GetStatus(ctx)
}

func (h *simHost) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	if h.dead {
		return "", errCrash
	}
	newRV, err := h.store.UpdateStatus(ctx, st, rv)
	if err == nil && h.crashAfter >= 0 {
		if h.crashAfter == 0 {
			h.dead = true
		}
		h.crashAfter--
	}
	return newRV, err
}

func (h *simHost) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	if h.dead {
		return errCrash
	}
	h.acted++
	err := h.RolloutCluster.EnsureInstaller(ctx, inst)
	if err != nil {
		h.refused = append(h.refused, inst)
	}
	return err
}

func (h *simHost) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	if h.dead {
		return errCrash
	}
	h.acted++
	return h.RolloutCluster.DeleteInstaller(ctx, inst)
}

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

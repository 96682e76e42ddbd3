package addon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

// simStore is an addon.Store that keeps the spec and the status apart, as a
// host does that reads the spec from its informer's cache and keeps the
// status on a resource of its own: the status has its own resource version,
// so a status written over a stale spec does not conflict, and the engine
// alone must refuse to act on a generation older than one it has seen. It
// keeps every spec and status it held, for reconciles from a stale cache.
//
// It persists each status as an API server does: through encoding/json of
// addon.Status, the type a host embeds in its CRD (codec), so a field the
// serialization drops is lost as it would be in a cluster. A status write
// may crash the Machine that makes it, before it lands or after.
type simStore struct {
	mu        sync.Mutex
	specs     []addon.Spec
	statuses  []addon.Status // statuses[i] is at resource version i+1
	conflicts int
	// crash, when set, crashes the Machine making the next status write:
	// after the write landed (crashAfter) or before.
	crash, crashAfter bool
	// codec is what a status goes through on its way to the store.
	codec func(addon.Status) addon.Status
	// written, when set, checks each status the engine writes against the
	// one before it, as the world is at the time of the write.
	written func(prev, next addon.Status)
	// crashed, when set, is told of each crash it injects.
	crashed func(landed bool)
}

var _ addon.Store = (*simStore)(nil)

// simCrash is what a crash injected at a host call panics with: it unwinds
// the Machine's Reconcile, as the process's death would end it.
type simCrash struct{}

func newSimStore(spec addon.Spec) *simStore {
	return &simStore{specs: []addon.Spec{spec}, statuses: []addon.Status{{}}, codec: jsonRoundTrip}
}

// jsonRoundTrip is a status as an API server stores it and serves it back.
func jsonRoundTrip(st addon.Status) addon.Status {
	raw, err := json.Marshal(st)
	if err != nil {
		panic(err)
	}
	var out addon.Status
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// dropping is a codec that loses the JSON field named field, as a CRD whose
// status schema lacks it loses it.
func dropping(field string) func(addon.Status) addon.Status {
	return func(st addon.Status) addon.Status {
		raw, err := json.Marshal(st)
		if err != nil {
			panic(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			panic(err)
		}
		delete(obj, field)
		if raw, err = json.Marshal(obj); err != nil {
			panic(err)
		}
		var out addon.Status
		if err := json.Unmarshal(raw, &out); err != nil {
			panic(err)
		}
		return out
	}
}

// object is the add-on with the spec and status at those indexes; its Host,
// which the Machine hands to the driver, names the status's version.
func (s *simStore) object(spec, status int) addon.Object {
	rv := strconv.Itoa(status + 1)
	return addon.Object{Spec: s.specs[spec], Status: *s.statuses[status].DeepCopy(), ResourceVersion: rv, Host: simHost(rv)}
}

// simHost is the version of the status a Machine decided from.
type simHost string

// currentStatus reports whether req was decided from the current status.
func (s *simStore) currentStatus(req addon.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return req.Host == simHost(strconv.Itoa(len(s.statuses)))
}

// current is the add-on as it is.
func (s *simStore) current() addon.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.object(len(s.specs)-1, len(s.statuses)-1)
}

// cached is the add-on as a cache read it: a spec and a status it held,
// drawn by pick from the last n of each (0: the current one).
func (s *simStore) cached(pickSpec, pickStatus func(n int) int) addon.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.object(len(s.specs)-1-pickSpec(len(s.specs)), len(s.statuses)-1-pickStatus(len(s.statuses)))
}

// asked reports whether a spec of generation gen or later asked for
// version.
func (s *simStore) asked(version string, gen int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, spec := range s.specs {
		if spec.Generation >= gen && spec.Version == version {
			return true
		}
	}
	return false
}

func (s *simStore) updateSpec(f func(*addon.Spec)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec := s.specs[len(s.specs)-1]
	f(&spec)
	s.specs = append(s.specs, spec)
}

// writeStatus writes st as another writer would, over any version.
func (s *simStore) writeStatus(st addon.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, s.codec(st))
}

func (s *simStore) Get(context.Context, string) (addon.Object, error) { return s.current(), nil }

func (s *simStore) UpdateStatus(_ context.Context, obj addon.Object, st addon.Status) (addon.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conflicts > 0:
		s.conflicts--
		return addon.Object{}, converge.Conflict(errors.New("sim: injected conflict"))
	case obj.ResourceVersion != strconv.Itoa(len(s.statuses)):
		return addon.Object{}, converge.Conflict(fmt.Errorf("sim: status at version %s, written over %s", strconv.Itoa(len(s.statuses)), obj.ResourceVersion))
	}
	if s.crash && !s.crashAfter {
		s.crashNow(false)
	}
	stored := s.codec(st)
	if s.written != nil {
		s.written(s.statuses[len(s.statuses)-1], stored)
	}
	s.statuses = append(s.statuses, stored)
	if s.crash {
		s.crashNow(true)
	}
	return s.object(len(s.specs)-1, len(s.statuses)-1), nil
}

// crashNow ends the Machine making the write, which landed or not.
func (s *simStore) crashNow(landed bool) {
	s.crash, s.crashAfter = false, false
	s.mu.Unlock()
	defer s.mu.Lock() // for UpdateStatus's deferred Unlock
	if s.crashed != nil {
		s.crashed(landed)
	}
	panic(simCrash{})
}

// TestSimAddonLosesWhatItsStoreDrops: the simulator's store persists the
// status through encoding/json, so a field the serialization drops (a
// json:"-" or a wrong tag, or in a cluster a CRD whose status schema lacks
// it) is lost in the simulation as it is on an API server, and the
// invariants see what follows: without inFlight two actions run at once and
// outcomes are lost; without fence the tokens stop growing.
func TestSimAddonLosesWhatItsStoreDrops(t *testing.T) {
	for _, field := range []string{"inFlight", "fence"} {
		t.Run(field, func(t *testing.T) {
			for seed := uint64(1); seed <= 200; seed++ {
				s := newSimulation(seed)
				s.store.codec = dropping(field)
				if err := s.run(); err != nil {
					t.Logf("schedule %d: %v", seed, err)
					return
				}
			}
			require.Fail(t, "no schedule noticed the store drop "+field)
		})
	}
}

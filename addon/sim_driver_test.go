package addon_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/converge-dev/converge/addon"
)

// simWorld is what the cluster runs, as the simulated driver keeps it,
// apart from the status.
type simWorld struct {
	// cluster is the version the cluster runs ("" when uninstalled), at
	// revision.
	cluster, revision string
	// read is true when its last health read decided from the current
	// status was healthy since it changed, and tested when its tests
	// passed (or failed, ignored) since; seen is true once such a read
	// said healthy since the cluster last changed.
	read, tested, seen bool
	// failed is the version of the latest failed install or upgrade
	// (failedBy), until an action succeeds; shunned the failed version a
	// rollback moved away from, until the engine takes a new spec, a
	// request or a deletion.
	failed, shunned string
	failedBy        addon.Action
	// carried names the version each revision the driver returned applied,
	// as Helm numbers a release's revisions: one per install, upgrade or
	// rollback.
	carried []string
	// fence is the newest fencing token the world took a write under;
	// maxFence the newest a call carried.
	fence, maxFence int64
	// passed holds the versions whose tests passed (or failed, ignored).
	passed map[string]bool
	// blind is true while the status cannot know what runs: an inspection
	// failed, or a Machine crashed after landing an action its claim no
	// longer covered; late marks the Machines that landed such an action
	// and have not recorded it yet.
	blind bool
	late  [2]bool
	// calls are the mutating driver calls running now, innermost last.
	calls []simCall
	// failNext makes the next install or upgrade fail, faults or not.
	failNext bool
}

// simCall is what one mutating driver call did: the ledger's entry.
type simCall struct {
	machine int
	action  addon.Action
	to      string
	fence   int64
	// failed is true when it returned an error, applied when it returned
	// none or crashed after it applied.
	failed, applied bool
}

func (c simCall) key() string { return string(c.action) + " " + c.to }

// simAttempts are the failed calls in a row of one action and version: how
// many, and when the last ended (simulation.elapsed).
type simAttempts struct {
	n  int
	at time.Duration
}

// errSimFenced is the refusal of a driver that fences out a write under a
// token older than one the world took.
var errSimFenced = errors.New("sim: refused: a newer claim wrote")

// simDriver acts on the simulation's world with outcomes the schedule draws.
type simDriver struct{ s *simulation }

var _ addon.Inspector = (*simDriver)(nil)

// held reports whether the status holds the claim with fencing token fence.
func held(st addon.Status, fence int64) bool {
	return st.InFlight != nil && st.InFlight.Fence == fence
}

// started checks a mutating call about to run against the world and the
// ledger: nothing runs while a claim the status holds runs; each claim's
// token is above every token before it; no install or upgrade of a version
// is attempted more often in a row than MaxRetries allows, nor retried
// sooner than its backoff, less how far the Machines' clocks differ (a
// Machine whose clock runs behind bounds a wait by its own clock, as it
// bounds one a clock stepped back left, and writes it).
func (s *simulation) started(c simCall, st addon.Status) {
	w := &s.world
	for _, r := range w.calls {
		if held(st, r.fence) {
			s.violate("%s (fence %d) started while %s (fence %d) runs under a claim the status holds", c.action, c.fence, r.action, r.fence)
		}
	}
	if c.fence <= w.maxFence {
		s.violate("%s carries fencing token %d, not above %d, which an earlier claim carried", c.action, c.fence, w.maxFence)
	}
	w.maxFence = max(w.maxFence, c.fence)
	att := s.attempts[c.key()]
	if att.n == 0 || c.action == addon.ActionTest || c.action == addon.ActionRollback {
		return
	}
	if c.action != addon.ActionUninstall && s.limits.maxRetries >= 0 && int32(att.n) > s.limits.maxRetries {
		s.violate("%s of %s attempted again after %d failed attempts in a row: MaxRetries %d allows %d", c.action, c.to, att.n, s.limits.maxRetries, s.limits.maxRetries+1)
	}
	floor := s.limits.backoff(att.n) - max(s.skew[1]-s.skew[0], s.skew[0]-s.skew[1])
	if wait := s.elapsed - att.at; wait < floor {
		s.violate("%s of %s attempted again %s after failed attempt %d, sooner than its backoff (%s)", c.action, c.to, wait, att.n, floor)
	}
}

// ended records in the ledger how call c ended; uncounted when it was
// fenced out or its Machine crashed, which no owner records as a failure.
func (s *simulation) ended(c simCall, uncounted bool) {
	s.ledger[c.fence] = c
	switch {
	case c.failed && !uncounted:
		att := s.attempts[c.key()]
		s.attempts[c.key()] = simAttempts{n: att.n + 1, at: s.elapsed}
	case c.applied:
		delete(s.attempts, c.key())
	}
}

// written checks each status write against the ledger and the world, and
// starts the attempts over once the engine took a new spec, a request or a
// deletion: Deleted only while nothing runs and nothing is in flight (a
// Driver that does not fence may land a late install after it), every
// attempt the status records happened as it says (a failure the driver
// returned, a success it applied), a lost attempt within MaxLostRetries is
// no failure, the last good version is one the world runs and read
// healthy, and Running is entered only on a version whose tests passed.
func (s *simulation) written(prev, next addon.Status) {
	w := &s.world
	requested := func(next, prev string) bool { return next != prev && next != "" }
	if next.ObservedGeneration != prev.ObservedGeneration || requested(next.LastResetToken, prev.LastResetToken) ||
		requested(next.LastForceToken, prev.LastForceToken) || next.Phase == addon.PhaseDeleting && prev.Phase != addon.PhaseDeleting {
		// The engine took a new spec, a request or a deletion: the
		// attempts start over. (A stale spec that drops a token fires
		// nothing.)
		clear(s.attempts)
		s.lostInARow, w.shunned = 0, ""
	}
	if next.Phase == addon.PhaseDeleted && prev.Phase != addon.PhaseDeleted && (next.InFlight != nil || w.cluster != "") {
		s.violate("Deleted while the cluster runs %q (in flight %v)", w.cluster, next.InFlight)
	}
	if next.LastGoodVersion != prev.LastGoodVersion && (next.LastGoodVersion != w.cluster || !w.seen) {
		s.violate("the last good version became %s, which the world does not run or was not read healthy (it runs %q)", next.LastGoodVersion, w.cluster)
	}
	var newest int64
	if n := len(prev.History); n > 0 {
		newest = prev.History[n-1].Fence
	}
	lost, failed := false, false
	for _, a := range next.History {
		if a.Fence <= newest {
			continue
		}
		call, ok := s.ledger[a.Fence]
		s.lostInARow++
		if a.Outcome != addon.OutcomeLost {
			s.lostInARow = 0
		}
		switch a.Outcome {
		case addon.OutcomeFailed:
			failed = true
			if !ok || !call.failed || s.abandoned[a.Fence] {
				s.violate("the status records a failed %s of %s (fence %d) that no driver call returned to a Machine alive to record it", a.Action, a.Version, a.Fence)
			}
		case addon.OutcomeSucceeded:
			// A takeover finds an attempt applied by what runs; only a
			// status left blind can take another's landing for it.
			if (!ok || !call.applied) && !w.blind {
				s.violate("the status records a successful %s of %s (fence %d) that no driver call applied", a.Action, a.Version, a.Fence)
			}
		case addon.OutcomeLost:
			lost = true
		}
	}
	failures := func(st addon.Status) int32 { return st.InstallFailures + st.UpgradeFailures + st.UninstallFailures }
	if lost && !failed && failures(next) > failures(prev) && s.lostInARow <= s.limits.maxLost {
		s.violate("a lost attempt was counted as a failure (%d lost in a row, %d retried)", s.lostInARow, s.limits.maxLost)
	}
	if s.limits.tests && !s.limits.ignored && next.Phase == addon.PhaseRunning && prev.Phase != addon.PhaseRunning && !w.passed[next.InstalledVersion] {
		s.violate("Running on %s, whose tests never passed", next.InstalledVersion)
	}
}

// crashed notes a crash injected at a status write: the claim it wrote, if
// it landed, is abandoned; a Machine that landed an action its claim no
// longer covered dies before it could say so.
func (s *simulation) crashed(landed bool) {
	if c := s.store.current().Status.InFlight; landed && c != nil {
		s.abandoned[c.Fence] = true
	}
	if s.world.late[s.running] {
		s.world.blind = true
	}
}

// healthy reports whether the world runs a version that serves (read
// healthy and, when the policy tests it, tested since it changed) and that
// the engine knows serves: st's last good version, which written holds to
// the world. (A read the engine dropped, its write lost to another's,
// tells the world but not the engine.)
func (s *simulation) healthy(st addon.Status) bool {
	w := &s.world
	return w.cluster != "" && w.read && (!s.limits.tests || w.tested) && st.LastGoodVersion == w.cluster
}

// mutate checks the invariants of an action about to change the world,
// runs it with the outcome the schedule draws, and changes the world
// unless the driver fences the call out.
func (d *simDriver) mutate(ctx context.Context, a addon.Action, req addon.Request) (revision string, err error) {
	s := d.s
	w := &s.world
	cur := s.store.current()
	st, spec := cur.Status, cur.Spec
	call := simCall{machine: s.running, action: a, to: req.To, fence: req.Fence}
	s.started(call, st)
	s.gateHeld(call, req.Spec)
	s.protected(a, req, st, spec)
	w.calls = append(w.calls, call)
	defer func() {
		w.calls = w.calls[:len(w.calls)-1]
		p := recover()
		call.failed = err != nil || p != nil
		if p != nil {
			d.failed(a, req)
		}
		s.ended(call, errors.Is(err, errSimFenced) || errors.Is(err, context.Canceled))
		if p != nil {
			panic(p)
		}
	}()
	crashAfter, err := d.fault(ctx, a)
	if err != nil {
		d.failed(a, req)
		return "", err
	}
	if s.fencing && req.Fence < w.fence {
		s.injected["a late write fenced out"]++
		return "", errSimFenced
	}
	w.late[s.running] = !held(s.store.current().Status, req.Fence)
	revision = d.apply(a, req, w.late[s.running])
	call.applied = true
	if crashAfter {
		w.blind = w.blind || w.late[s.running]
		s.crashIn()
		return revision, ctx.Err()
	}
	return revision, nil
}

// protected checks that the action keeps what serves: a healthy version is
// neither uninstalled (but on deletion or for a failure of another
// version) nor replaced by one no spec asks for (as a cache may serve it:
// of a generation the engine had not yet seen one above); a version a
// rollback remediated is not applied again before a new spec or request;
// and a rollback names a revision that carried its target.
func (s *simulation) protected(a addon.Action, req addon.Request, st addon.Status, spec addon.Spec) {
	w := &s.world
	if a == addon.ActionInstall && st.InstalledVersion != "" {
		s.violate("a fresh install while %s is installed", st.InstalledVersion)
	}
	if s.healthy(st) {
		switch {
		case a == addon.ActionUninstall && !spec.Deleting && !(w.failed != "" && w.failed != w.cluster && s.uninstallsFor(w.failedBy)):
			s.violate("the healthy %s is uninstalled, neither deleted nor remediating a failure of another version (last failed: %q)", w.cluster, w.failed)
		case (a == addon.ActionUpgrade || a == addon.ActionRollback) && req.To != w.cluster && !s.store.asked(req.To, st.SeenGeneration):
			s.violate("the healthy %s is replaced by %s, which no spec since generation %d asks for (now %s)", w.cluster, req.To, st.SeenGeneration, spec.Version)
		}
	}
	if (a == addon.ActionInstall || a == addon.ActionUpgrade) && w.shunned != "" && req.To == w.shunned {
		s.violate("%s of %s, which a rollback remediated, with no new spec or request since", a, req.To)
	}
	if a == addon.ActionRollback && !s.carries(req.Revision, req.To) {
		s.violate("rollback to %s at revision %q, which carried %v", req.To, req.Revision, w.carried)
	}
}

// failed is the world after a failed call.
func (d *simDriver) failed(a addon.Action, req addon.Request) {
	w := &d.s.world
	switch a {
	case addon.ActionInstall, addon.ActionUpgrade:
		w.failed, w.failedBy = req.To, a
	case addon.ActionTest:
		w.tested = d.s.limits.ignored
		w.passed[req.To] = w.passed[req.To] || w.tested
	}
}

// apply changes the world as the call a asks, under its fencing token. A
// late call (its claim no longer held, its Driver not fencing) that
// re-applies the version the cluster runs leaves what was read of it: no
// inspection can tell it landed.
func (d *simDriver) apply(a addon.Action, req addon.Request, late bool) (revision string) {
	w := &d.s.world
	if a == addon.ActionRollback && w.failed != req.To {
		w.shunned = w.failed
	}
	switch a {
	case addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback:
		w.carried = append(w.carried, req.To)
		revision = strconv.Itoa(len(w.carried))
		if !late || req.To != w.cluster {
			w.read, w.tested, w.seen = false, false, false
		}
		w.cluster, w.revision = req.To, revision
	case addon.ActionUninstall:
		w.cluster, w.revision, w.read, w.tested, w.seen = "", "", false, false, false
	case addon.ActionTest:
		w.tested = true
		w.passed[req.To] = true
	}
	if a != addon.ActionTest {
		w.failed, w.failedBy = "", ""
		w.fence = max(w.fence, req.Fence)
	}
	return revision
}

// carries reports whether the driver's revision carried version.
func (s *simulation) carries(revision, version string) bool {
	n, err := strconv.Atoi(revision)
	return err == nil && n >= 1 && n <= len(s.world.carried) && s.world.carried[n-1] == version
}

func (s *simulation) uninstallsFor(a addon.Action) bool {
	switch a {
	case addon.ActionInstall:
		return s.limits.installUninstalls
	case addon.ActionUpgrade:
		return s.limits.upgradeUninstalls
	}
	return false
}

// fault draws what goes wrong with a mutating call, if faults are on: an
// error to return, or a crash after the action applied.
func (d *simDriver) fault(ctx context.Context, a addon.Action) (crashAfter bool, err error) {
	s := d.s
	if s.world.failNext && (a == addon.ActionInstall || a == addon.ActionUpgrade) {
		s.world.failNext = false
		return false, fmt.Errorf("sim: %s failed: the new version's pods crash", a)
	}
	if !s.faults {
		return false, nil
	}
	switch r := s.rng.IntN(100); {
	case r < 10:
		s.injected[simTwoAtOnce]++
		other := 1 - s.running
		s.logf("  m%d reconciles while m%d's %s runs", other+1, s.running+1, a)
		s.reconcile(other, s.store.current(), false)
	case r < 14:
		s.injected["spec change during an action"]++
		s.logf("  spec changes while %s runs", a)
		s.changeSpec()
	case r < 18:
		s.injected["crash before the action applied"]++
		s.logf("  crash while %s runs, before it applied", a)
		s.crashIn()
		return false, ctx.Err()
	case r < 21:
		s.injected["crash after the action applied"]++
		s.logf("  crash while %s runs, after it applied", a)
		return true, nil
	case r < 26:
		s.pause(a)
	case r < 30:
		s.injected["hang past the action timeout"]++
		s.logf("  %s hangs past the action timeout", a)
		s.advance(defaultActionTimeout)
		return false, context.DeadlineExceeded
	case r < 33:
		s.injected["driver panic"]++
		s.logf("  %s panics", a)
		panic(fmt.Sprintf("sim: %s dereferenced a nil map, password=%s", a, simSecret))
	case r < 48:
		s.injected["action failed"]++
		if s.rng.IntN(20) == 0 {
			s.injected["action failed with a huge error"]++
			return false, fmt.Errorf("sim: %s failed: password=%s %s", a, simSecret, simHugeError)
		}
		return false, fmt.Errorf("sim: %s failed: registry login password=%s rejected", a, simSecret)
	}
	return false, nil
}

// crashIn crashes the Machine whose driver call runs: its context ends,
// and the claim it runs under is abandoned.
func (s *simulation) crashIn() {
	s.abandoned[s.world.calls[len(s.world.calls)-1].fence] = true
	s.cancel()
}

// pause stalls the Machine running action a past its claim's expiry while
// the other one reconciles (and may take the add-on over); then it resumes
// and its action goes on.
func (s *simulation) pause(a addon.Action) {
	s.injected["a replica pauses past its claim"]++
	paused := s.running
	other := 1 - paused
	s.logf("  m%d pauses past its claim while %s runs; m%d goes on", paused+1, a, other+1)
	s.advance(s.limits.claim + time.Second)
	for n := 1 + s.rng.IntN(3); n > 0; n-- {
		s.reconcile(other, s.store.current(), false)
		s.advance([]time.Duration{time.Second, 10 * time.Second, time.Minute}[s.rng.IntN(3)])
	}
	s.logf("  m%d resumes its %s", paused+1, a)
}

func (d *simDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	return d.mutate(ctx, addon.ActionInstall, req)
}

func (d *simDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	if req.Rollback {
		return d.mutate(ctx, addon.ActionRollback, req)
	}
	return d.mutate(ctx, addon.ActionUpgrade, req)
}

func (d *simDriver) Uninstall(ctx context.Context, req addon.Request) error {
	_, err := d.mutate(ctx, addon.ActionUninstall, req)
	return err
}

func (d *simDriver) Test(ctx context.Context, req addon.Request) error {
	_, err := d.mutate(ctx, addon.ActionTest, req)
	return err
}

// Health reads the world: nothing installed is unhealthy; with faults on a
// read may panic, be unhealthy or unreadable, or last while another
// Machine's action runs to its end. A read decided from the current status
// is what the world's health is; it is taken before whatever happens while
// it lasts.
func (d *simDriver) Health(_ context.Context, req addon.Request) (addon.Health, error) {
	s := d.s
	w := &s.world
	h, err := addon.HealthHealthy, error(nil)
	r := s.rng.IntN(100)
	switch {
	case w.cluster == "":
		h = addon.HealthUnhealthy
	case !s.faults:
	case r < 3:
		s.injected["health panic"]++
		panic("sim: health probe crashed")
	case r < 18:
		h = addon.HealthUnhealthy
	case r < 28:
		h, err = addon.HealthUnknown, fmt.Errorf("sim: metrics token=%s expired", simSecret)
	}
	if s.store.currentStatus(req) {
		w.read = err == nil && h == addon.HealthHealthy
		w.seen = w.seen || w.read
	}
	if s.faults && r >= 90 {
		s.injected["an action runs to its end during a health read"]++
		other := 1 - s.running
		s.logf("  the spec changes and m%d reconciles while m%d reads the health", other+1, s.running+1)
		s.changeSpec()
		s.reconcile(other, s.store.current(), false)
	}
	return h, err
}

func (d *simDriver) Drift(context.Context, addon.Request) (bool, string, error) {
	s := d.s
	if !s.faults {
		return false, "", nil
	}
	return s.rng.IntN(3) == 0, "Deployment replicas changed by hand", nil
}

// Inspect reports what the world runs; with faults on it may fail, which
// leaves the status blind until it learns again.
func (d *simDriver) Inspect(context.Context, addon.Request) (addon.Installed, error) {
	s := d.s
	if s.faults && s.rng.IntN(20) == 0 {
		s.injected["inspection failed"]++
		s.world.blind = true
		return addon.Installed{}, fmt.Errorf("sim: release storage unreachable, token=%s", simSecret)
	}
	return addon.Installed{Version: s.world.cluster, Revision: s.world.revision}, nil
}

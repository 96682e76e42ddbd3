package addontest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/internal/input"
)

// ExploreOptions bounds an exhaustive exploration of a transition table.
type ExploreOptions struct {
	// Table is the table to explore; nil means addon.DefaultTable().
	Table *addon.Table
	// Policy is the policy addon.Decide runs with.
	Policy addon.Policy
	// Depth is how many steps from a new add-on the exploration goes.
	Depth int
	// Gates adds two steps: the policy is paused or resumed, and its
	// maintenance windows close or open (a Deny window is added to
	// Policy.Windows or taken away). Once the world behaves, for the
	// liveness rule, neither holds.
	Gates bool
	// Converge is the k of the liveness rule: from every reachable state,
	// once the world behaves, Running (healthy: at the desired version, or
	// at the last good one after a failed upgrade) or Deleted is reached
	// within Converge steps (a Failed add-on or a stopped deletion
	// first gets a reset request, as an operator would send, or a new spec
	// where the table has no reset row). 0 means 40.
	Converge int
	// Replay, when not empty, walks only the path an ExploreError names
	// (its Path) and tries the steps after it, checking the same rules,
	// instead of exploring; a path that is not one of this exploration is
	// converge.ErrInvalid.
	Replay string
}

// ExploreReport says how much an exploration covered.
type ExploreReport struct {
	// States counts the distinct states reached (statuses with the status
	// before their latest write, their spec and world, times taken
	// relative to the present).
	States int
	// Transitions counts the decisions tried.
	Transitions int
	// Depth is the depth reached.
	Depth int
	// Reasons lists, sorted, every reason the decisions tried wrote in an
	// event, in Status.Reason or in a condition: a subset of
	// addon.Reasons.
	Reasons []string
}

// ExploreError is a rule an exploration found broken and the path that
// breaks it.
type ExploreError struct {
	// Rule says which rule broke, and how.
	Rule string
	// Steps name the steps from a new add-on to the decision that broke it.
	Steps []string
	// Path is the same steps as ExploreOptions.Replay takes them.
	Path string
}

// Error implements error.
func (e *ExploreError) Error() string {
	return fmt.Sprintf("addontest: explore: %s\n  after: %s\n  path: %s", e.Rule, strings.Join(e.Steps, " → "), e.Path)
}

// Explore checks, breadth-first, every state reachable from a new add-on
// within opts.Depth steps. A state is the spec, the persisted status, the
// time, and the world the add-on runs in: the version the cluster runs,
// whether it was last read healthy, the versions whose tests passed, and
// the newest fencing token it took a write under. A step is one of:
//
//   - a look by addon.Decide after the world moved: a new version, a new spec at
//     the same version, a deletion, a pause or resume and windows that
//     close or open (with ExploreOptions.Gates), a reset or force request, time jumping to a deadline, a claim's expiry or the
//     next requeue, the clock stepping back an hour, another writer
//     stretching a claim's expiry to year 9999;
//   - a look at a stale spec: the one before the latest generation, as an
//     old cache serves it;
//   - a look at a stale status: the one before the latest write, as a
//     lagging cache serves it, with the spec as it is. A Machine writes what
//     it decides from a read over that read's resource version, which is no
//     longer the persisted one, so the Store refuses any write (a claim, a
//     health read, a changed status) and the Machine looks again afresh: the
//     state stays as it is. What reaches the host is only a decision that
//     writes nothing: its wait and its Deleted, which the rules check;
//   - the outcome of the action a look claimed: it succeeds or fails at
//     once, or stays in flight while other steps happen, and then succeeds,
//     fails, or its Machine crashes after its claim was written, with the
//     action applied or not (a crash between any two writes), or pauses
//     past its claim's expiry and resumes later, after any other steps: its
//     action lands unless the Driver fences it out (a newer claim wrote),
//     and its outcome arrives;
//   - a health read: healthy, unhealthy or unknown;
//   - an inspection (the explorer's Driver is an addon.Inspector): what the
//     cluster runs, or an error.
//
// After every decision it checks, against the world and the spec as they
// are rather than against the status:
//
//   - a version the cluster runs and last read healthy is never
//     uninstalled, except on deletion or as the uninstall the policy
//     chooses for a failed install or upgrade of a different version, and
//     never replaced by another version the spec does not ask for, whatever
//     failed before; while it is the version the spec asks for, it stays
//     watched (something is pending: a health check, a re-apply; or a look
//     is due at once, for a spec seen while a claim held);
//   - no Install is chosen while a version is installed;
//   - a spec generation below the highest one a decision was given is
//     acted on in no way;
//   - nothing runs while a claim holds, and no claim holds past the latest
//     expiry the engine writes (ActionTimeout plus ClaimGrace after it was
//     taken, or after now if that lies in the future);
//   - no wait (RequeueAfter) is longer than the longest backoff, poll
//     interval or claim the policy sets (but for closed windows, looked
//     at again when they open, no later), and no deadline lies further
//     than the longest phase timeout, even after the clock stepped back;
//   - no install, upgrade or test starts while the policy is paused or
//     its windows are closed, but for a deletion; the status holds
//     (Status.Holds) only while they keep the pending action, not in
//     flight, from starting, never during a deletion;
//   - Deleted follows a successful uninstall (or an inspection that found
//     nothing installed), the cluster empty and nothing in flight;
//   - the last good version and the observed generation never go back;
//   - every new claim carries a fencing token above every token before it;
//   - whenever no claim is in flight, what the status says the cluster
//     runs (Mismatch when one stands, else InstalledVersion) is what it
//     runs, but while an inspection that failed left it blind;
//   - an add-on enters Running only on a version whose tests passed, when
//     the policy tests and does not ignore their failures;
//   - a failure is counted (InstallFailures, UpgradeFailures,
//     UninstallFailures) only when the Driver reported one: an error, a
//     health read, or a lost attempt beyond Policy.MaxLostRetries;
//   - a failed or lost attempt is retried no sooner than the policy's
//     shortest backoff, or the phase's deadline when that comes first;
//   - nothing is stuck: the status validates, and a decision that asks for
//     no requeue waits for the spec (Failed, Deleted, a stopped deletion, a
//     pause that holds);
//
// and from every state the liveness rule of ExploreOptions.Converge. The
// error is an *ExploreError.
func Explore(opts ExploreOptions) (ExploreReport, error) {
	if opts.Converge == 0 {
		opts.Converge = 40
	}
	if err := opts.Policy.Validate(); err != nil {
		return ExploreReport{}, err
	}
	if opts.Table == nil {
		opts.Table = addon.DefaultTable()
	}
	zones, err := converge.Zones(nil).Load(opts.Policy.Windows)
	if err != nil {
		return ExploreReport{}, err
	}
	e := &explorer{opts: opts, limits: exploreLimitsOf(opts.Policy), zones: zones, seen: map[string]bool{}, live: map[string]bool{}, reasons: map[string]bool{}}
	start := exploreState{spec: addon.Spec{Name: "explore/addon", Generation: 1, Version: exploreVersions[0]}, now: exploreEpoch}
	if opts.Replay != "" {
		return e.replay(start)
	}
	e.seen[e.key(&start)] = true
	frontier := []*exploreState{&start}
	var report ExploreReport
	for depth := 0; depth < opts.Depth && len(frontier) > 0; depth++ {
		var next []*exploreState
		for _, s := range frontier {
			if err := e.liveness(s); err != nil {
				return e.report(depth), err
			}
			succ, err := e.successors(s)
			if err != nil {
				return e.report(depth), err
			}
			for i := range succ {
				if k := e.key(&succ[i]); !e.seen[k] {
					e.seen[k] = true
					next = append(next, &succ[i])
				}
			}
		}
		frontier = next
		report.Depth = depth + 1
	}
	for _, s := range frontier {
		if err := e.liveness(s); err != nil {
			return e.report(report.Depth), err
		}
	}
	return e.report(report.Depth), nil
}

// replay walks opts.Replay from start.
func (e *explorer) replay(start exploreState) (ExploreReport, error) {
	s := &start
	for depth, c := range strings.Split(e.opts.Replay, ".") {
		i, err := strconv.Atoi(c)
		if err != nil {
			return e.report(depth), input.Invalidf("addontest", "replay", "%q: step %d is %q, not a number", e.opts.Replay, depth+1, c)
		}
		if err := e.liveness(s); err != nil {
			return e.report(depth), err
		}
		succ, err := e.successors(s)
		if err != nil {
			return e.report(depth), err
		}
		if i < 0 || i >= len(succ) {
			return e.report(depth), input.Invalidf("addontest", "replay", "%q: step %d has %d successors, not %d", e.opts.Replay, depth+1, len(succ), i+1)
		}
		s = &succ[i]
	}
	if _, err := e.successors(s); err != nil {
		return e.report(len(s.path.names())), err
	}
	return e.report(len(s.path.names())), e.liveness(s)
}

// explorer is one exploration: the states seen, those known to converge,
// and what the decisions tried wrote.
type explorer struct {
	opts        ExploreOptions
	limits      exploreLimits
	zones       converge.Zones
	seen        map[string]bool
	live        map[string]bool
	transitions int
	reasons     map[string]bool
}

func (e *explorer) report(depth int) ExploreReport {
	return ExploreReport{States: len(e.seen), Transitions: e.transitions, Depth: depth, Reasons: slices.Sorted(maps.Keys(e.reasons))}
}

// wrote notes the reasons decision d wrote.
func (e *explorer) wrote(d addon.Decision) {
	for _, ev := range d.Events {
		e.reasons[ev.Reason] = true
	}
	if d.Status.Reason != "" {
		e.reasons[d.Status.Reason] = true
	}
	for _, c := range d.Status.Conditions {
		e.reasons[c.Reason] = true
	}
}

package addon_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

// FuzzDecide builds inputs from the fuzz bytes (any phase, pending action,
// claim, counters, versions, generations, times, spec and observation) and
// checks that Decide never panics, that whatever it accepts it turns into a
// status that validates, and that a look at a spec below the generation
// seen changes nothing (but the conditions of a Deleted add-on).
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{4, 2, 1, 0, 0, 1, 1, 1, 0, 3, 2, 1, 0, 5, 6, 7, 8})
	f.Add([]byte{6, 0, 0, 3, 1, 2, 2, 2, 1, 1, 1, 0, 2, 0, 0, 1, 1, 1})
	f.Add([]byte{7, 4, 4, 3, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		next := func() int {
			if len(b) == 0 {
				return 0
			}
			v := int(b[0])
			b = b[1:]
			return v
		}
		pick := func(n int) int { return next() % n }
		phases := append(allPhases, "")
		actions := []addon.Action{addon.ActionNone, addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback, addon.ActionUninstall, addon.ActionCheckHealth, addon.ActionTest}
		versions := []string{"", "v1", "v2"}
		ts := func() *metav1.Time {
			if pick(3) == 0 {
				return nil
			}
			return at(t0.Add(time.Duration(pick(40)-20) * time.Minute))
		}
		st := addon.Status{
			Phase: phases[pick(len(phases))], PendingAction: actions[pick(len(actions))], NextAttemptTime: ts(), Deadline: ts(),
			Verifying: actions[pick(4)], LastFailedAction: actions[pick(3)],
			InstallFailures: int32(pick(8)), UpgradeFailures: int32(pick(8)), UninstallFailures: int32(pick(8)), Failures: int32(pick(10)),
			LastAttemptTime: ts(), InstalledVersion: versions[pick(3)], LastGoodVersion: versions[pick(3)], FailedVersion: versions[pick(3)],
			ObservedGeneration: int64(pick(4)), SeenGeneration: int64(pick(5)), LastResetToken: versions[pick(3)], HeldSince: ts(),
			ReapplyTime: ts(),
			Health:      []addon.Health{"", addon.HealthHealthy, addon.HealthUnhealthy, addon.HealthUnknown}[pick(4)], HealthUnknownSince: ts(),
		}
		if a := actions[pick(len(actions))]; a != addon.ActionNone && a != addon.ActionCheckHealth {
			exp := ts()
			if exp == nil {
				exp = at(t0)
			}
			started := metav1.NewTime(t0.Add(time.Duration(pick(40)-20) * time.Minute))
			st.InFlight = &addon.Claim{Action: a, Owner: []string{"m1", "m2"}[pick(2)], To: versions[pick(3)], Started: started, Expires: *exp}
		}
		spec := addon.Spec{Name: "mesh", Generation: int64(pick(5)), Version: versions[1+pick(2)], Deleting: pick(4) == 0,
			ResetToken: versions[pick(3)], ForceToken: versions[pick(3)]}
		var obs addon.Observation
		switch pick(4) {
		case 1:
			obs = addon.Observation{Action: addon.ActionCheckHealth, Health: []addon.Health{addon.HealthHealthy, addon.HealthUnhealthy, "odd"}[pick(3)], Drifted: pick(2) == 0}
		case 2:
			if st.InFlight != nil {
				obs = addon.Observation{Action: st.InFlight.Action, Claim: st.InFlight}
				if pick(2) == 0 {
					obs.Err = errors.New("password=hunter2")
				}
			}
		}
		policy := []addon.Policy{{}, {Drift: addon.DriftCorrect, Test: addon.TestPolicy{Enable: true}}, {MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall}}[pick(3)]
		policy.Paused = pick(4) == 0
		if pick(4) == 0 {
			policy.Windows = fuzzWindows
		}
		d, err := addon.Decide(addon.Input{Spec: spec, Status: st, Observation: obs, Policy: policy, Now: t0.Add(time.Duration(pick(30)) * time.Minute), Owner: "m1"})
		if err != nil {
			if !errors.Is(err, converge.ErrInvalid) {
				t.Fatalf("an error that is not ErrInvalid: %v", err)
			}
			return
		}
		if err := d.Status.Validate(); err != nil {
			t.Fatalf("Decide accepted %+v and returned an invalid status: %v", st, err)
		}
		if gated(d.Action) && !spec.Deleting && (policy.Paused || policy.Windows != nil) {
			t.Fatalf("%s started while paused or the windows are closed", d.Action)
		}
		if d.Action == addon.ActionInstall && st.InstalledVersion != "" && st.Phase != "" {
			t.Fatalf("Install chosen while %s is installed", st.InstalledVersion)
		}
		if obs.Action == "" && st.Phase != "" && st.Phase != addon.PhaseDeleted && spec.Generation < max(st.SeenGeneration, st.ObservedGeneration) &&
			(d.Action != "" || !reflect.DeepEqual(d.Status, st)) {
			t.Fatalf("a look at the stale generation %d acted (seen %d): %+v", spec.Generation, max(st.SeenGeneration, st.ObservedGeneration), d)
		}
	})
}

// fuzzWindows are closed at every time FuzzDecide draws: a Deny window
// through 1 January 2026.
var fuzzWindows = []converge.Window{{Kind: converge.WindowDeny, Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: 24 * time.Hour}}}

// gated reports whether a is what a pause or closed windows keep from
// starting, as Policy.Paused documents it.
func gated(a addon.Action) bool {
	return a == addon.ActionInstall || a == addon.ActionUpgrade || a == addon.ActionTest
}

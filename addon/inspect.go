package addon

import (
	"fmt"

	"github.com/converge-dev/converge"
)

// Installed is what an Inspector reports the cluster runs.
// +kubebuilder:object:generate=true
type Installed struct {
	// Version is the add-on version the cluster runs ("" when nothing is
	// installed). A Driver that cannot name it reports a text that names
	// no version, such as "revision 7 (another version)".
	// +optional
	Version string `json:"version,omitempty"`
	// Revision is the driver's revision that carries it ("" when the
	// driver has none).
	// +optional
	Revision string `json:"revision,omitempty"`
}

// recordInspection handles what the Inspector reported (ActionInspect).
// After a takeover (the claim in flight expired), the attempt is found
// applied when the cluster runs what it applied (see landed) and is
// recorded as succeeded; otherwise it is lost. Then what runs is compared
// with InstalledVersion (inspected), a claim that still holds
// notwithstanding: a late outcome may have landed beside it. An inspection
// that failed tells nothing: a takeover then trusts the status, as without
// an Inspector.
func (d *decider) recordInspection() {
	obs := &d.in.Observation
	st := &d.st
	if st.Phase == PhaseDeleted {
		return
	}
	c := st.InFlight
	if !d.expired(c) {
		// A claim that holds is no takeover: what runs is still news.
		c = nil
	}
	if obs.Err != nil || obs.Installed == nil {
		why := "the Inspector could not say what the cluster runs"
		if obs.Err != nil {
			why += ": " + d.redact(obs.Err.Error())
		}
		d.event(converge.EventTypeWarning, ReasonInspectionFailed, why)
		if c != nil {
			d.lost(c, "; "+why)
		}
		return
	}
	inst := *obs.Installed
	if c != nil {
		if landed(c, inst) && (st.Mismatch == nil || st.Mismatch.Version != inst.Version) {
			st.LostAttempts = 0
			d.outcome(c, nil, OutcomeSucceeded, inst.Revision, " (found applied after its claim expired)")
		} else {
			d.lost(c, "; the cluster runs "+describeInstalled(inst.Version))
		}
	}
	news := d.inspected(inst)
	if st.Mismatch != nil && st.Phase == PhaseRunning && d.correct(d.mismatchMessage()) {
		return
	}
	if news {
		d.reportMismatch()
	}
}

// landed reports whether the attempt of claim c, taken over, was applied:
// the cluster runs the version it applied (nothing, for an uninstall) and
// not the one it started from. A re-apply, which starts from the version it
// applies, and a test are never found applied: they run again; nor is an
// attempt whose target the cluster already ran, a mismatch standing when
// it was claimed (recordInspection checks that).
func landed(c *Claim, inst Installed) bool {
	switch c.Action {
	case ActionInstall, ActionUpgrade, ActionRollback:
		return c.To != c.From && inst.Version == c.To
	case ActionUninstall:
		return c.From != "" && inst.Version == ""
	}
	return false
}

// inspected compares what the cluster runs with InstalledVersion: a
// mismatch stands in Status.Mismatch until an inspection agrees (or an
// action succeeds). True when the mismatch is news.
func (d *decider) inspected(inst Installed) bool {
	st := &d.st
	if inst.Version == st.InstalledVersion {
		st.Mismatch = nil
		return false
	}
	news := st.Mismatch == nil || st.Mismatch.Version != inst.Version
	st.Mismatch = &inst
	return news
}

// reportMismatch reports a new mismatch: Status.Reason and a Warning event
// (Degraded and Ready follow from Status.Mismatch).
func (d *decider) reportMismatch() {
	st := &d.st
	st.Reason, st.Message = ReasonInstalledVersionMismatch, d.mismatchMessage()
	d.event(converge.EventTypeWarning, ReasonInstalledVersionMismatch, st.Message)
}

// mismatchMessage says what runs and what the status says is installed.
func (d *decider) mismatchMessage() string {
	return fmt.Sprintf("the cluster runs %s, the status says %s is installed", describeInstalled(d.st.Mismatch.Version), describeInstalled(d.st.InstalledVersion))
}

func describeInstalled(version string) string {
	if version == "" {
		return "nothing"
	}
	return version
}

package addon

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
)

// The condition types addon sets besides kstatus's Ready, Reconciling and
// Stalled and conditions.TypeDegraded. They mean what Flux's helm-controller
// means by them.
const (
	// TypeReleased is True after an install or upgrade succeeded (reason
	// InstallSucceeded or UpgradeSucceeded), False after one failed.
	TypeReleased = "Released"
	// TypeRemediated is True after a remediation (rollback or uninstall)
	// succeeded, False after one failed; removed by the next release.
	TypeRemediated = "Remediated"
	// TypeTestSuccess is True after the tests passed, False after they
	// failed (Policy.Test); removed by the next release.
	TypeTestSuccess = "TestSuccess"
	// TypeDrifted is True while the Driver reports drift, False when it
	// reports none (only with a Policy.Drift other than DriftIgnore).
	TypeDrifted = "Drifted"
)

// setConditions writes Ready, Reconciling, Stalled and Degraded for the
// phase; the Flux conditions were set where their outcomes were recorded.
func (d *decider) setConditions() error {
	st := &d.st
	msg := conditions.TruncateMessage(st.Message, conditions.MaxMessageLength)
	degraded, degradedReason, degradedMsg := metav1.ConditionFalse, conditions.ReasonAsExpected, ""
	switch {
	case st.Phase == PhaseRunning:
		d.removeCond(conditions.TypeReconciling)
		d.removeCond(conditions.TypeStalled)
		switch {
		case st.Mismatch != nil:
			d.setCond(conditions.TypeReady, metav1.ConditionFalse, ReasonInstalledVersionMismatch, d.mismatchMessage())
		case st.Health == HealthUnhealthy:
			d.setCond(conditions.TypeReady, metav1.ConditionFalse, ReasonUnhealthy, msg)
			degraded, degradedReason, degradedMsg = metav1.ConditionTrue, ReasonUnhealthy, msg
		case st.Health == HealthUnknown && st.HealthUnknownSince != nil && !d.in.Now.Before(st.HealthUnknownSince.Add(d.rules.healthUnknownTimeout)):
			unknown := fmt.Sprintf("health unreadable since %s", st.HealthUnknownSince.UTC().Format("2006-01-02T15:04:05Z"))
			d.setCond(conditions.TypeReady, metav1.ConditionUnknown, ReasonHealthUnknown, unknown)
			degraded, degradedReason, degradedMsg = metav1.ConditionTrue, ReasonHealthUnknown, unknown
		default:
			d.setCond(conditions.TypeReady, metav1.ConditionTrue, string(PhaseRunning), msg)
			switch {
			case st.ReapplyTime != nil:
				degraded, degradedReason = metav1.ConditionTrue, string(TriggerReapplyFailed)
				degradedMsg = "re-apply of " + st.InstalledVersion + " failed; running " + st.InstalledVersion + ", re-applying it at " + stamp(st.ReapplyTime.Time)
			case st.FailedVersion != "" && st.FailedVersion == st.InstalledVersion:
				degraded, degradedReason = metav1.ConditionTrue, string(TriggerReapplyFailed)
				degradedMsg = "re-apply of " + st.InstalledVersion + " failed, retries exhausted; running " + st.InstalledVersion
			case st.FailedVersion != "":
				degraded, degradedReason = metav1.ConditionTrue, ReasonVersionFailed
				degradedMsg = "version " + st.FailedVersion + " failed; running " + st.InstalledVersion
			}
		}
	case st.Phase == PhaseDeleted:
		d.removeCond(conditions.TypeReconciling)
		d.removeCond(conditions.TypeStalled)
		d.setCond(conditions.TypeReady, metav1.ConditionFalse, string(PhaseDeleted), msg)
	case st.Phase == PhaseFailed, d.deletionStopped():
		d.setKStatus(conditions.TypeStalled, conditions.TypeReconciling, metav1.ConditionFalse, safeReason(st.Reason, st.Phase), msg)
	case st.Phase == PhaseDeleting && d.rules.exhausted(st.UninstallFailures):
		d.setKStatus(conditions.TypeStalled, conditions.TypeReconciling, metav1.ConditionFalse, ReasonUninstallFailing, msg)
	default:
		d.setKStatus(conditions.TypeReconciling, conditions.TypeStalled, metav1.ConditionUnknown, string(st.Phase), msg)
	}
	switch {
	case st.Phase == PhaseFailed || st.Phase == PhaseReinitializing || st.Phase == PhaseRemediating:
		degraded, degradedReason, degradedMsg = metav1.ConditionTrue, string(st.Phase), msg
	case st.Phase == PhaseChecking && st.Verifying == ActionRollback:
		degraded, degradedReason, degradedMsg = metav1.ConditionTrue, string(TriggerRollbackSucceeded), msg
	}
	if st.Mismatch != nil && st.Phase != PhaseDeleted {
		degraded, degradedReason, degradedMsg = metav1.ConditionTrue, ReasonInstalledVersionMismatch, d.mismatchMessage()
	}
	d.setCond(conditions.TypeDegraded, degraded, degradedReason, degradedMsg)
	d.showHold()
	return d.err
}

// setKStatus sets the abnormal kstatus condition True and Ready to ready
// with the same reason and message, and removes the other abnormal one.
func (d *decider) setKStatus(abnormal, other string, ready metav1.ConditionStatus, reason, msg string) {
	d.setCond(abnormal, metav1.ConditionTrue, reason, msg)
	d.setCond(conditions.TypeReady, ready, reason, msg)
	d.removeCond(other)
}

// setCond sets a condition through conditions.Set, its message bounded,
// copying the list first (Decide never changes its input); nothing is
// copied or checked when the condition already reads so.
func (d *decider) setCond(typ string, status metav1.ConditionStatus, reason, msg string) {
	msg = conditions.TruncateMessage(msg, conditions.MaxMessageLength)
	gen := d.st.ObservedGeneration
	for i := range d.st.Conditions {
		c := &d.st.Conditions[i]
		if c.Type == typ {
			if c.Status == status && c.Reason == reason && c.Message == msg && c.ObservedGeneration == gen {
				return
			}
			break
		}
	}
	d.ownConditions()
	c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	if _, err := conditions.Set(&d.st.Conditions, c, d.now.Time, conditions.WithObservedGeneration(gen)); err != nil && d.err == nil {
		d.err = fmt.Errorf("addon: conditions: %w", err)
	}
}

// removeCond removes a condition, copying the list first.
func (d *decider) removeCond(typ string) {
	i := slices.IndexFunc(d.st.Conditions, func(c metav1.Condition) bool { return c.Type == typ })
	if i < 0 {
		return
	}
	d.ownConditions()
	d.st.Conditions = slices.Delete(d.st.Conditions, i, i+1)
}

func (d *decider) condIs(typ string, status metav1.ConditionStatus) bool {
	for i := range d.st.Conditions {
		if d.st.Conditions[i].Type == typ {
			return d.st.Conditions[i].Status == status
		}
	}
	return false
}

func (d *decider) ownConditions() {
	if d.condsOwned {
		return
	}
	d.condsOwned = true
	out := make([]metav1.Condition, len(d.st.Conditions), len(d.st.Conditions)+4)
	copy(out, d.st.Conditions)
	d.st.Conditions = out
}

// safeReason returns reason as a condition reason the API accepts (a host
// may have persisted anything), else the phase.
func safeReason(reason string, p Phase) string {
	if r := conditions.SanitizeReason(reason); r != "" {
		return r
	}
	return string(p)
}

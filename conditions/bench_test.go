package conditions

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func runningConditions() []metav1.Condition {
	var conds []metav1.Condition
	for _, c := range []metav1.Condition{
		cond("Ready", True, "InstallSucceeded", "add-on v1.2.3 is running"),
		cond("Reconciling", False, "AsExpected", ""),
		cond("Released", True, "UpgradeSucceeded", "v1.2.3"),
	} {
		if _, err := Set(&conds, c, t0, WithObservedGeneration(3)); err != nil {
			panic(err)
		}
	}
	return conds
}

func TestSetAllocatesNothingWhenNothingChanges(t *testing.T) {
	conds := runningConditions()
	c := cond("Ready", True, "InstallSucceeded", "add-on v1.2.3 is running")
	allocs := testing.AllocsPerRun(100, func() {
		changed, err := Set(&conds, c, t0, WithObservedGeneration(3))
		if err != nil || changed {
			t.Fatalf("changed %v, err %v", changed, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Set of an unchanged condition allocated %v times", allocs)
	}
}

func BenchmarkSetUnchanged(b *testing.B) {
	conds := runningConditions()
	c := cond("Ready", True, "InstallSucceeded", "add-on v1.2.3 is running")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Set(&conds, c, t0, WithObservedGeneration(3))
	}
}

func BenchmarkSetChanged(b *testing.B) {
	conds := runningConditions()
	cs := [2]metav1.Condition{
		cond("Ready", False, "UpgradeFailed", "v1.2.4 failed"),
		cond("Ready", True, "InstallSucceeded", "add-on v1.2.3 is running"),
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = Set(&conds, cs[i&1], t0, WithObservedGeneration(3))
		i++
	}
}

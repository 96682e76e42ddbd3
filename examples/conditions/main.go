// Command conditions shows what the conditions package computes for the
// sub-conditions of an imaginary cluster operator: their Degraded union, with
// a grace period, and a Ready summary, at three moments of a fixed timeline.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var conds []metav1.Condition
	set := func(c metav1.Condition, at time.Time) error {
		_, err := conditions.Set(&conds, c, at, conditions.WithObservedGeneration(4))
		return err
	}
	for _, c := range []metav1.Condition{
		{Type: conditions.TypeAvailable, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "3 nodes are active"},
		{Type: "NodeInstallerDegraded", Status: metav1.ConditionTrue, Reason: "InstallerPodFailed", Message: "installer-5-node-2: OOMKilled"},
		{Type: "StaticPodsDegraded", Status: metav1.ConditionFalse, Reason: "AsExpected"},
	} {
		if err := set(c, t0); err != nil {
			return err
		}
	}
	opts := conditions.UnionOptions{Type: conditions.TypeDegraded, Inertia: conditions.InertiaByType(2*time.Minute, nil)}
	for _, now := range []time.Time{t0.Add(time.Minute), t0.Add(3 * time.Minute)} {
		degraded, err := conditions.Union(conds, opts, now)
		if err != nil {
			return err
		}
		if err := set(degraded, now); err != nil {
			return err
		}
		ready, err := conditions.Summary(conds, conditions.SummaryOptions{ForTypes: []string{conditions.TypeAvailable, conditions.TypeDegraded, "BackupsHealthy"}})
		if err != nil {
			return err
		}
		if err := set(ready, now); err != nil {
			return err
		}
		fmt.Printf("at %s:\n", now.Format(time.TimeOnly))
		for _, c := range conds {
			fmt.Printf("  %-22s %-7s %-33s %s\n", c.Type, c.Status, c.Reason, strings.ReplaceAll(c.Message, "\n", " | "))
		}
	}
	return nil
}

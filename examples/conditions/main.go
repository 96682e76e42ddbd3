// Command conditions shows what the conditions package computes for the
// sub-conditions of an imaginary cluster operator: their Degraded union, with
// a grace period, and a Ready summary, at two moments of a fixed timeline.
// It takes no flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/internal/cli"
)

func main() { cli.Main(run) }

func run(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conditions", flag.ContinueOnError)
	err := cli.Parse(fs, args, stderr)
	if err == nil {
		err = show(stdout)
	}
	return cli.Exit(stderr, fs.Name(), err)
}

// show prints the conditions at each moment of the timeline.
func show(out io.Writer) error {
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
		fmt.Fprintf(out, "at %s:\n", now.Format(time.TimeOnly))
		for _, c := range conds {
			fmt.Fprintf(out, "  %-22s %-7s %-33s %s\n", c.Type, c.Status, c.Reason, strings.ReplaceAll(c.Message, "\n", " | "))
		}
	}
	return nil
}

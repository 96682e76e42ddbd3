package payload_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// Maintenance windows hold an update back: outside the weeknight window read on
// Berlin's clock, the worker goes on reconciling 1.0.0, holds, and wakes when the
// window opens, where the update starts.
func ExampleDecide_windows() {
	policy := payload.Policy{Windows: []converge.Window{{
		Kind: converge.WindowAllow, Schedule: "0 22 * * MON-FRI", Duration: metav1.Duration{Duration: 8 * time.Hour},
		TimeZone: "Europe/Berlin",
	}}}
	zones, err := converge.Zones(nil).Load(policy.Windows) // the Worker does this once
	if err != nil {
		fmt.Println(err)
		return
	}
	from := payload.Release{Version: "1.0.0", Image: "example.com/release@sha256:aaa"}
	to := payload.Release{Version: "1.1.0", Image: "example.com/release@sha256:bbb"}
	now := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC) // a Monday, 14:00 in Berlin
	due := converge.NewMicroTime(now.Add(time.Minute))
	running := payload.Status{Release: from, State: payload.StateReconciling, Done: 862, Total: 862, NextApplyTime: &due}
	d, err := payload.Decide(payload.Input{Desired: to, Status: running, Policy: policy, Zones: zones, Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Status.Release, d.Status.Holds[0].Reason, d.Status.Holds[0].Message)
	fmt.Println("the reconcile of 1.0.0 comes first, in", d.RequeueAfter)

	d, err = payload.Decide(payload.Input{Desired: to, Status: running, Policy: policy, Zones: zones, Now: now.Add(8 * time.Hour)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Apply, d.Status.State, d.Status.Release, d.Status.Holds)
	// Output:
	// 1.0.0 WindowClosed the maintenance windows are closed until 2026-03-30T20:00:00Z
	// the reconcile of 1.0.0 comes first, in 1m0s
	// true Updating 1.1.0 []
}

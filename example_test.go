package converge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
)

// An engine fills a Policy's Backoff with its own defaults, then spaces the
// retries with Delay; JitterPercent 0 turns jitter off.
func ExampleBackoff_Delay() {
	engineDefaults := converge.Backoff{
		Initial:       metav1.Duration{Duration: 15 * time.Second},
		Max:           metav1.Duration{Duration: 10 * time.Minute},
		FactorPercent: 150,
		JitterPercent: ptr.To[int32](10),
	}
	fromCRD := converge.Backoff{Max: metav1.Duration{Duration: time.Minute}, JitterPercent: ptr.To[int32](0)}
	b := fromCRD.WithDefaults(engineDefaults)
	for failures := int32(1); failures <= 5; failures++ {
		fmt.Println(failures, b.Delay(failures, 0.5))
	}
	// Output:
	// 1 15s
	// 2 22.5s
	// 3 33.75s
	// 4 50.625s
	// 5 1m0s
}

// A store marks its own lost race with Conflict; every engine recognises it,
// and the apiserver's 409, with IsConflict.
func ExampleConflict() {
	err := converge.Conflict(errors.New("etag mismatch"))
	fmt.Println(converge.IsConflict(err), errors.Is(err, converge.ErrConflict))
	fmt.Println(err)
	// Output:
	// true true
	// converge: status conflict: etag mismatch
}

// Bad input from any converge package matches ErrInvalid and names the
// package, the input and every problem.
func ExampleBackoff_Validate() {
	err := converge.Backoff{FactorPercent: 50, JitterPercent: ptr.To[int32](120)}.Validate()
	fmt.Println(errors.Is(err, converge.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// converge: invalid backoff: factorPercent 50 is below 100; jitterPercent 120 is outside 0..100
}

// An engine persists its holds sorted and bounded; a tool reads their
// reasons without parsing a message.
func ExampleSortHolds() {
	holds := converge.SortHolds([]converge.Hold{
		{Reason: "RevisionFailing", Object: "node-b", Message: "revision 3 is failing on node-a: node-b waits"},
		{Reason: "Paused", Message: "the rollout is paused"},
	})
	for _, h := range holds {
		fmt.Printf("%s %q\n", h.Reason, h.Object)
	}
	// Output:
	// Paused ""
	// RevisionFailing "node-b"
}

// A shell loads the zones of its windows once; each decision asks whether
// the windows are open, and a closed window becomes a typed hold and a
// requeue at the time they open.
func ExampleWindowsOpen() {
	windows := []converge.Window{
		{Kind: converge.WindowAllow, Schedule: "0 22 * * MON-FRI", Duration: metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "Europe/Berlin"},
		{Kind: converge.WindowDeny, Schedule: "0 0 24 DEC *", Duration: metav1.Duration{Duration: 9 * 24 * time.Hour}},
	}
	zones, err := converge.Zones(nil).Load(windows) // the shell's I/O, once
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, now := range []time.Time{
		time.Date(2024, 12, 20, 12, 0, 0, 0, time.UTC), // a Friday, noon
		time.Date(2024, 12, 20, 22, 0, 0, 0, time.UTC), // that night, 23:00 in Berlin
		time.Date(2024, 12, 24, 12, 0, 0, 0, time.UTC), // Christmas Eve
	} {
		open, change, err := converge.WindowsOpen(windows, zones, now) // pure, in Decide
		switch {
		case err != nil:
			fmt.Println(err)
		case open:
			fmt.Printf("%s: open until %s\n", now.Format(time.DateTime), change.Format(time.DateTime))
		default:
			hold := converge.WindowClosedHold(change)
			fmt.Printf("%s: %s, %s; requeue after %s\n", now.Format(time.DateTime), hold.Reason, hold.Message, change.Sub(now))
		}
	}
	// Output:
	// 2024-12-20 12:00:00: WindowClosed, the maintenance windows are closed until 2024-12-20T21:00:00Z; requeue after 9h0m0s
	// 2024-12-20 22:00:00: open until 2024-12-21 05:00:00
	// 2024-12-24 12:00:00: WindowClosed, the maintenance windows are closed until 2025-01-02T00:00:00Z; requeue after 204h0m0s
}

// A MicroTime writes microseconds and reads back a time written with seconds
// only, as metav1.Time writes it, which metav1.MicroTime refuses.
func ExampleMicroTime() {
	var due struct {
		At converge.MicroTime `json:"at"`
	}
	if err := json.Unmarshal([]byte(`{"at":"2026-01-01T00:00:00Z"}`), &due); err != nil {
		fmt.Println(err)
		return
	}
	due.At.Time = due.At.Add(1500 * time.Microsecond)
	b, _ := json.Marshal(due)
	fmt.Println(string(b))
	// Output:
	// {"at":"2026-01-01T00:00:00.001500Z"}
}

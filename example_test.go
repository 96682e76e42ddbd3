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

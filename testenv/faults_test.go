package testenv

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

// Every class is in the closed list once, and applies to some verbs.
func TestFaultClassesAreClosed(t *testing.T) {
	seen := map[FaultClass]bool{}
	for _, c := range FaultClasses() {
		assert.False(t, seen[c], "%s is listed twice", c)
		seen[c] = true
		assert.NotEmpty(t, classVerbs[c], "%s applies to no verb", c)
	}
	assert.Len(t, classVerbs, len(seen), "a class applies to verbs but is not listed")
}

func TestFaultPlanValidate(t *testing.T) {
	tests := []struct {
		name    string
		fault   Fault
		wantErr string // "": valid
	}{
		{name: "a request fault needs only its class and a percent", fault: Fault{Class: Conflict, Percent: 100}},
		{name: "selectors narrow a fault", fault: Fault{Class: InternalError, Verbs: []string{"get", "list"}, Resources: []string{"configmaps", "deployments/status"},
			Namespaces: []string{"shop"}, Names: []string{"settings"}, Percent: 5}},
		{name: "TooManyRequests takes a Delay for Retry-After", fault: Fault{Class: TooManyRequests, Percent: 1, Delay: time.Second}},
		{name: "WatchClose takes Events", fault: Fault{Class: WatchClose, Percent: 50, Events: 3}},
		{name: "StaleView takes a Lag", fault: Fault{Class: StaleView, Percent: 50, Lag: time.Second}},
		{name: "StaleView takes LagEvents", fault: Fault{Class: StaleView, Percent: 50, LagEvents: 2}},

		{name: "an unknown class is named with the closed list", fault: Fault{Class: "Flood", Percent: 1},
			wantErr: `faults[0]: unknown Class "Flood" (one of Conflict, TooManyRequests, InternalError, TimeoutAfterCommit, Latency, WatchClose, WatchDelay, WatchGone, StaleView, Crash)`},
		{name: "a zero percent would never strike", fault: Fault{Class: Conflict},
			wantErr: "faults[0]: Percent 0 is not in 1..100"},
		{name: "a percent past 100 is refused", fault: Fault{Class: Conflict, Percent: 101},
			wantErr: "faults[0]: Percent 101 is not in 1..100"},
		{name: "a verb outside the class is refused", fault: Fault{Class: Conflict, Percent: 1, Verbs: []string{"get"}},
			wantErr: `faults[0]: Conflict does not apply to verb "get" (only to update, patch, delete)`},
		{name: "a verb the API does not have is refused", fault: Fault{Class: Latency, Delay: time.Second, Percent: 1, Verbs: []string{"GET"}},
			wantErr: `faults[0]: Latency does not apply to verb "GET"`},
		{name: "a resource names at most one subresource", fault: Fault{Class: Conflict, Percent: 1, Resources: []string{"a/b/c", "/status", "pods/"}},
			wantErr: `Resources: "a/b/c" is not resource or resource/subresource; faults[0]: Resources: "/status" is not resource or resource/subresource; faults[0]: Resources: "pods/" is not`},
		{name: "an empty name selects nothing", fault: Fault{Class: Conflict, Percent: 1, Namespaces: []string{""}, Names: []string{""}},
			wantErr: "faults[0]: Namespaces holds an empty name; faults[0]: Names holds an empty name"},
		{name: "Latency needs a Delay", fault: Fault{Class: Latency, Percent: 1},
			wantErr: "faults[0]: Latency needs a Delay"},
		{name: "WatchDelay needs a Delay", fault: Fault{Class: WatchDelay, Percent: 1},
			wantErr: "faults[0]: WatchDelay needs a Delay"},
		{name: "StaleView needs one lag", fault: Fault{Class: StaleView, Percent: 1},
			wantErr: "faults[0]: StaleView needs one of Lag and LagEvents"},
		{name: "StaleView takes one lag only", fault: Fault{Class: StaleView, Percent: 1, Lag: time.Second, LagEvents: 1},
			wantErr: "faults[0]: StaleView needs one of Lag and LagEvents"},
		{name: "a parameter of another class is a mistake", fault: Fault{Class: Conflict, Percent: 1, Delay: time.Second, Lag: time.Second},
			wantErr: "faults[0]: Conflict takes no Delay; faults[0]: Conflict takes no Lag"},
		{name: "a negative parameter is refused", fault: Fault{Class: WatchClose, Percent: 1, Events: -1},
			wantErr: "faults[0]: Delay, Events, Lag and LagEvents cannot be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := FaultPlan{Seed: 7, Faults: []Fault{tt.fault}}.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorContains(t, err, "testenv: invalid fault plan: ")
			assert.ErrorContains(t, err, tt.wantErr)
			var invalid *converge.InvalidError
			require.True(t, errors.As(err, &invalid))
			assert.Equal(t, "testenv", invalid.Pkg)
		})
	}
}

// An empty plan injects nothing and is valid; each fault's problems are
// named by its index.
func TestFaultPlanValidateNamesEachFault(t *testing.T) {
	require.NoError(t, FaultPlan{}.Validate())
	err := FaultPlan{Faults: []Fault{{Class: Conflict, Percent: 1}, {Class: Conflict}}}.Validate()
	assert.EqualError(t, err, "testenv: invalid fault plan: faults[1]: Percent 0 is not in 1..100")
}

package conditions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPolaritiesOf(t *testing.T) {
	host := Polarities{"Throttled": Negative, "Progressing": Positive, "Healthy": Positive}
	tests := []struct {
		name string
		pols Polarities
		typ  string
		want Polarity
	}{
		{name: "default positive", typ: "Available", want: Positive},
		{name: "default negative", typ: "Degraded", want: Negative},
		{name: "kstatus reconciling", typ: "Reconciling", want: Negative},
		{name: "kstatus stalled", typ: "Stalled", want: Negative},
		{name: "undeclared is positive", typ: "Whatever", want: Positive},
		{name: "suffix of a default", typ: "NodeInstallerDegraded", want: Negative},
		{name: "suffix of a positive default", typ: "APIServerAvailable", want: Positive},
		{name: "host type", pols: host, typ: "Throttled", want: Negative},
		{name: "host suffix", pols: host, typ: "APIThrottled", want: Negative},
		{name: "host overrides a default", pols: host, typ: "Progressing", want: Positive},
		{name: "host override applies to suffixes", pols: host, typ: "NodeProgressing", want: Positive},
		{name: "longest suffix wins", pols: Polarities{"Healthy": Positive, "Unhealthy": Negative}, typ: "PodUnhealthy", want: Negative},
		{name: "shorter suffix when the longer does not match", pols: Polarities{"Healthy": Positive, "Unhealthy": Negative}, typ: "PodHealthy", want: Positive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.pols.Of(tt.typ))
		})
	}
}

func TestPolaritiesGoodBad(t *testing.T) {
	tests := []struct {
		name              string
		c                 string
		status            string
		wantGood, wantBad bool
	}{
		{name: "ready true", c: "Ready", status: "True", wantGood: true},
		{name: "ready false", c: "Ready", status: "False", wantBad: true},
		{name: "degraded true", c: "Degraded", status: "True", wantBad: true},
		{name: "degraded false", c: "Degraded", status: "False", wantGood: true},
		{name: "unknown is neither", c: "Degraded", status: "Unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cond(tt.c, metav1.ConditionStatus(tt.status), "R", "")
			assert.Equal(t, tt.wantGood, Polarities(nil).IsGood(c))
			assert.Equal(t, tt.wantBad, Polarities(nil).IsBad(c))
		})
	}
	assert.Equal(t, "Negative", Negative.String())
	assert.Equal(t, "Positive", Positive.String())
}

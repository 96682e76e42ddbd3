package kube

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/converge-dev/converge"
)

func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

func TestRecordEventsBoundsWhatTheAPIServerChecks(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "status", Namespace: "ns"}}
	evs := []converge.Event{
		{Type: "Normal", Reason: "NodeCurrentRevisionChanged", Message: "Updated node-a from revision 1 to 2"},
		{Type: "Warning", Reason: "installer failed", Message: "installer on node-b: %v not a format"},
		{Type: "", Reason: "", Message: strings.Repeat("x", 2000)},
	}
	want := []string{
		"Normal NodeCurrentRevisionChanged Updated node-a from revision 1 to 2",
		"Warning InstallerFailed installer on node-b: %v not a format",
		"Normal Unknown " + strings.Repeat("x", 1021) + "…",
	}

	rec := events.NewFakeRecorder(10)
	RecordEvents(rec, obj, "Rollout", evs)
	assert.Equal(t, want, drain(rec.Events))

	legacy := record.NewFakeRecorder(10)
	RecordLegacyEvents(legacy, obj, evs)
	assert.Equal(t, want, drain(legacy.Events))
}

func TestRecordEventsWithoutARecorderDoesNothing(t *testing.T) {
	var rec *events.FakeRecorder
	RecordEvents(rec, nil, "Rollout", []converge.Event{{Type: "Normal", Reason: "R", Message: "m"}})
	RecordLegacyEvents(nil, nil, []converge.Event{{Type: "Normal", Reason: "R", Message: "m"}})
}

package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

func TestRunInMemory(t *testing.T) {
	for _, args := range [][]string{nil, {"-nodes", "1"}, {"-nodes", "6"}, {"-max-unavailable", "2"}} {
		t.Run(fmtArgs(args), func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), args, &out), out.String())
			s := out.String()
			assert.Contains(t, s, "installer: copying secret/serving-cert: connection refused")
			assert.Contains(t, s, "Warning InstallerPodFailed")
			assert.Contains(t, s, "creating installer installer-2-retry-1-")
			assert.Contains(t, s, "converged on revision 3")
			assert.Contains(t, s, "Progressing  False   AllNodesAtLatestRevision")
		})
	}
}

func fmtArgs(args []string) string {
	if len(args) == 0 {
		return "defaults"
	}
	return args[0] + "=" + args[1]
}

func TestRunBadFlags(t *testing.T) {
	var out bytes.Buffer
	assert.Error(t, run(context.Background(), []string{"-nodes", "0"}, &out))
	assert.Error(t, run(context.Background(), []string{"-bogus"}, &out))
	assert.NoError(t, run(context.Background(), []string{"-h"}, &out), "help is not a failure")
	assert.Contains(t, out.String(), "-simulate-kubelet")
}

func TestInstallerState(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name string
		pod  corev1.Pod
		want rollout.InstallerState
	}{
		{name: "pending without start time uses creation time",
			pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: start}},
			want: rollout.InstallerState{Phase: rollout.InstallerPending, StartTime: start.Time}},
		{name: "running", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start}},
			want: rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: start.Time}},
		{name: "succeeded", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
			want: rollout.InstallerState{Phase: rollout.InstallerSucceeded}},
		{name: "OOM killed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "m",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "installer", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", Message: "out of memory"}}}}}},
			want: rollout.InstallerState{Phase: rollout.InstallerFailed, Message: "m",
				Containers: []rollout.ContainerTermination{{Name: "installer", Message: "out of memory", OOMKilled: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, installerState(&tt.pod))
		})
	}
}

func TestOperandState(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rev := func(r string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "p", Labels: map[string]string{labelRevision: r}}
	}
	tests := []struct {
		name    string
		pod     corev1.Pod
		want    rollout.OperandState
		wantErr bool
	}{
		{name: "ready", pod: corev1.Pod{ObjectMeta: rev("3"), Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since}}}},
			want: rollout.OperandState{Phase: rollout.OperandReady, Revision: 3, ReadySince: since.Time}},
		{name: "running, not ready", pod: corev1.Pod{ObjectMeta: rev("3"), Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			want: rollout.OperandState{Phase: rollout.OperandPending, Revision: 3}},
		{name: "failed", pod: corev1.Pod{ObjectMeta: rev("2"), Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "crash"}},
			want: rollout.OperandState{Phase: rollout.OperandFailed, Revision: 2, Message: "crash"}},
		{name: "no revision label", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := operandState(&tt.pod)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestConfigMapStatusConformance(t *testing.T) {
	ctx := context.Background()
	s := &configMapStatus{client: newMemoryClient(), ns: "ns", name: "status"}
	require.NoError(t, s.create(ctx, rollout.Status{LatestAvailableRevision: 1,
		NodeStatuses: []rollout.NodeStatus{{NodeName: "a", CurrentRevision: 1}}}))
	require.NoError(t, fake.TestRolloutStatusStore(ctx, s))
}

func TestConfigMapStatusUpdate(t *testing.T) {
	ctx := context.Background()
	initial := rollout.Status{LatestAvailableRevision: 1, NodeStatuses: []rollout.NodeStatus{{NodeName: "a", CurrentRevision: 1}}}
	next := rollout.Status{LatestAvailableRevision: 2, NodeStatuses: []rollout.NodeStatus{{NodeName: "a", CurrentRevision: 1, TargetRevision: 2}}}
	tests := []struct {
		name string
		// rv picks the version to write over from the one read.
		rv           func(read string) string
		wantConflict bool
		wantErr      bool
	}{
		{name: "current version", rv: func(read string) string { return read }},
		{name: "stale version", rv: func(string) string { return "1" }, wantConflict: true},
		{name: "no version", rv: func(string) string { return "" }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newMemoryClient()
			s := &configMapStatus{client: client, ns: "ns", name: "status"}
			require.NoError(t, s.create(ctx, initial))
			cm, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "status", metav1.GetOptions{})
			require.NoError(t, err)
			cm.Annotations = map[string]string{"other": "writer"}
			_, err = client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{})
			require.NoError(t, err)
			_, read, err := s.GetStatus(ctx)
			require.NoError(t, err)

			written, err := s.UpdateStatus(ctx, next, tt.rv(read))
			got, gotRV, getErr := s.GetStatus(ctx)
			require.NoError(t, getErr)
			switch {
			case tt.wantConflict:
				require.ErrorIs(t, err, rollout.ErrConflict)
				assert.True(t, apierrors.IsConflict(err), "the API's 409 stays reachable")
				assert.Equal(t, initial, got, "a conflicting write changes nothing")
			case tt.wantErr:
				require.Error(t, err)
				assert.NotErrorIs(t, err, rollout.ErrConflict)
				assert.Equal(t, initial, got)
			default:
				require.NoError(t, err)
				assert.Equal(t, next, got)
				assert.Equal(t, written, gotRV)
			}
			cm, err = client.CoreV1().ConfigMaps("ns").Get(ctx, "status", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"other": "writer"}, cm.Annotations, "the status write keeps other writers' annotations")
		})
	}
}

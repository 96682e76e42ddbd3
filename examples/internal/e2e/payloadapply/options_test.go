//go:build !integration

package payloadapply

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFieldManagerNamesTheInstanceUnderLeaderElection(t *testing.T) {
	assert.Equal(t, "payload-apply", FieldManager(false, "a"))
	assert.Equal(t, "payload-apply/a", FieldManager(true, "a"), "each instance writes as itself")
}

func TestPolicy(t *testing.T) {
	memory, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	real := &Cluster{}
	tests := []struct {
		name         string
		cluster      *Cluster
		interval     time.Duration
		wantInterval time.Duration
		wantDeadline time.Duration
		wantTimeout  time.Duration
	}{
		{name: "a real cluster", cluster: real, wantInterval: 30 * time.Second, wantDeadline: 10 * time.Minute, wantTimeout: 5 * time.Minute},
		{name: "a real cluster, -interval", cluster: real, interval: 2 * time.Second, wantInterval: 2 * time.Second, wantDeadline: 10 * time.Minute, wantTimeout: 5 * time.Minute},
		{name: "in memory: virtual time", cluster: memory, wantInterval: 3 * time.Minute, wantDeadline: time.Minute, wantTimeout: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, deadline := tt.cluster.Policy(tt.interval)
			assert.Equal(t, tt.wantInterval, policy.Interval.Duration)
			assert.Equal(t, tt.wantDeadline, deadline)
			assert.Equal(t, tt.wantTimeout, policy.ReadinessTimeout.Duration)
		})
	}
}

func TestClusterString(t *testing.T) {
	memory, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	assert.Equal(t, "an in-memory cluster (ConfigMap web-settings is refused twice)", memory.String())
	assert.Equal(t, "the cluster of /tmp/kubeconfig", (&Cluster{kubeconfig: "/tmp/kubeconfig"}).String())
}

package addonlifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterOptionsValidate(t *testing.T) {
	good := ClusterOptions{Addons: 20, Workers: 4, Namespace: "addons", Timeout: time.Minute}
	require.NoError(t, good.Validate())
	tests := []struct {
		name string
		edit func(*ClusterOptions)
		want string
	}{
		{name: "negative addons", edit: func(o *ClusterOptions) { o.Addons = -1 }, want: "-addons: -1 is negative"},
		{name: "no workers", edit: func(o *ClusterOptions) { o.Workers = 0 }, want: "-workers: 0 is less than 1"},
		{name: "bad namespace", edit: func(o *ClusterOptions) { o.Namespace = "Not_A_Namespace" }, want: `-namespace: "Not_A_Namespace"`},
		{name: "no timeout", edit: func(o *ClusterOptions) { o.Timeout = 0 }, want: "-timeout: 0s is not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.edit(&o)
			assert.ErrorContains(t, o.Validate(), tt.want)
		})
	}
}

func TestFleetNamesSortAndNameServices(t *testing.T) {
	names := fleetNames(120)
	assert.Equal(t, "mesh-000", names[0])
	assert.Equal(t, "mesh-119", names[119])
	assert.IsIncreasing(t, names)
	for _, n := range names {
		_, err := parseRef("ns/" + n)
		assert.NoError(t, err)
	}
}

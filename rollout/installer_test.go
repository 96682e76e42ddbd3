package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInstallerName(t *testing.T) {
	tests := []struct {
		name string
		n    NodeStatus
		want string
	}{
		{name: "no target", n: node("master-0", 3, 0), want: ""},
		{name: "first attempt", n: node("master-0", 3, 4), want: "installer-4-master-0"},
		{name: "first retry", n: failed(node("master-0", 3, 4), 4, 1, ReasonInstallerPodFailed, t0), want: "installer-4-retry-1-master-0"},
		{name: "third retry", n: failed(node("master-0", 3, 4), 4, 3, ReasonInstallerPodFailed, t0), want: "installer-4-retry-3-master-0"},
		{name: "failure of an older revision", n: failed(node("master-0", 3, 4), 3, 2, ReasonInstallerPodFailed, t0), want: "installer-4-master-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, InstallerName(tt.n))
		})
	}
}

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge"
)

func TestObservationValidate(t *testing.T) {
	tests := []struct {
		name    string
		obs     Observation
		wantErr string
	}{
		{name: "zero values mean not found", obs: Observation{"a": {}}},
		{name: "every phase", obs: Observation{
			"a": {Operand: OperandState{Phase: OperandReady, Revision: 1}, Installer: InstallerState{Phase: InstallerSucceeded}},
			"b": {Operand: OperandState{Phase: OperandFailed}, Installer: InstallerState{Phase: InstallerFailed}},
			"c": {Operand: OperandState{Phase: OperandPending}, Installer: InstallerState{Phase: InstallerRunning}},
			"d": {Operand: OperandState{Phase: OperandNotFound}, Installer: InstallerState{Phase: InstallerPending}},
		}},
		{name: "unknown operand phase", obs: Observation{"a": {Operand: OperandState{Phase: 9}}}, wantErr: `rollout: invalid observation: node "a": unknown operand phase OperandPhase(9)`},
		{name: "unknown installer phase", obs: Observation{"a": {Installer: InstallerState{Phase: 9}}}, wantErr: `rollout: invalid observation: node "a": unknown installer phase InstallerPhase(9)`},
		{name: "negative operand revision", obs: Observation{"a": {Operand: OperandState{Revision: -1}}}, wantErr: `rollout: invalid observation: node "a": negative operand revision -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Status{LatestAvailableRevision: 1}
			for name := range tt.obs {
				st.NodeStatuses = append(st.NodeStatuses, NodeStatus{NodeName: name})
			}
			_, err := Decide(Input{Status: st, Observation: tt.obs, Now: t0})
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

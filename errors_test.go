package converge_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge"
)

func TestIsConflict(t *testing.T) {
	apiConflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "status", errors.New("the object has been modified"))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil is no conflict", err: nil, want: false},
		{name: "another error is no conflict", err: errors.New("boom"), want: false},
		{name: "ErrConflict", err: converge.ErrConflict, want: true},
		{name: "ErrConflict wrapped", err: fmt.Errorf("store: %w", converge.ErrConflict), want: true},
		{name: "an error marked with Conflict", err: converge.Conflict(errors.New("etag mismatch")), want: true},
		{name: "the apiserver's 409", err: apiConflict, want: true},
		{name: "the apiserver's 409 wrapped", err: fmt.Errorf("write: %w", apiConflict), want: true},
		{name: "the apiserver's 404", err: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "status"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, converge.IsConflict(tt.err))
		})
	}
}

func TestConflictKeepsTheHostsError(t *testing.T) {
	assert.NoError(t, converge.Conflict(nil))
	err := converge.Conflict(fmt.Errorf("write: %w", fs.ErrPermission))
	assert.ErrorIs(t, err, converge.ErrConflict)
	assert.ErrorIs(t, err, fs.ErrPermission)
	assert.Equal(t, "converge: status conflict: write: permission denied", err.Error())
}

func TestErrInvalidIsNotErrConflict(t *testing.T) {
	assert.False(t, errors.Is(converge.ErrInvalid, converge.ErrConflict))
	assert.False(t, converge.IsConflict(converge.ErrInvalid))
}

func TestInvalidErrorReadsAsEveryPackagesBadInput(t *testing.T) {
	err := converge.Invalid("crconverge", "RolloutOptions", "Kind is required", "Pods: Namespace is required")
	assert.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, "crconverge: invalid RolloutOptions: Kind is required; Pods: Namespace is required")
	var ie *converge.InvalidError
	require.ErrorAs(t, fmt.Errorf("wrapped: %w", err), &ie)
	assert.Equal(t, []string{"Kind is required", "Pods: Namespace is required"}, ie.Problems)
	assert.NoError(t, converge.Invalid("crconverge", "RolloutOptions"), "no problem is no error")
	assert.EqualError(t, converge.Invalidf("kube", "manifest", "%s has no kind", "a.yaml"), "kube: invalid manifest: a.yaml has no kind")
}

package payload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var coGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterOperator"}

func coUpdating(name string, effect Effect) *UpdateError {
	return &UpdateError{
		Effect:              effect,
		Reason:              "ClusterOperatorUpdating",
		PluralReason:        "ClusterOperatorsUpdating",
		Message:             fmt.Sprintf("Cluster operator %s is updating versions", name),
		PluralMessageFormat: "Cluster operators %s are updating versions",
		Name:                name,
		Task:                newTask("0000_50_"+name+"_co.yaml", coGVK),
	}
}

func TestSummarize(t *testing.T) {
	boom := errors.New("boom")
	other := &UpdateError{Reason: "UpdatePayloadFailed", Message: "Could not update pod \"x\" (1 of 2)", Effect: EffectNone}
	notCO := coUpdating("etcd", EffectFail)
	notCO.Task = newTask("0000_50_etcd_pod.yaml", podGVK)
	sameFail := &UpdateError{Message: "same", Effect: EffectFail}

	tests := []struct {
		name       string
		errs       []error
		wantNil    bool
		wantSame   error
		wantReason string
		wantMsg    string
		wantEffect Effect
		wantNames  []string
	}{
		{name: "no errors", errs: nil, wantNil: true},
		{
			name: "context errors are dropped, wrapped ones too",
			errs: []error{
				context.Canceled,
				fmt.Errorf("applying: %w", context.DeadlineExceeded),
				&UpdateError{Message: "Could not update", Nested: context.Canceled},
				nil,
			},
			wantNil: true,
		},
		{name: "one error is returned as is", errs: []error{context.Canceled, boom}, wantSame: boom},
		{
			name:     "errors with one text are one error, the one with the strongest effect",
			errs:     []error{&UpdateError{Message: "same", Effect: EffectNone}, sameFail, &UpdateError{Message: "same", Effect: EffectReport}},
			wantSame: sameFail,
		},
		{
			name:       "same reason and kind condense, strongest effect",
			errs:       []error{coUpdating("network", EffectNone), coUpdating("dns", EffectFailAfterInterval), coUpdating("auth", EffectReport)},
			wantReason: "ClusterOperatorsUpdating",
			wantMsg:    "Cluster operators auth, dns, network are updating versions",
			wantEffect: EffectFailAfterInterval,
			wantNames:  []string{"auth", "dns", "network"},
		},
		{
			name:       "condensed and unrelated errors become bullets",
			errs:       []error{coUpdating("network", EffectNone), boom, coUpdating("dns", EffectNone), other},
			wantReason: ReasonMultipleErrors,
			wantMsg: "Multiple errors are preventing progress:\n" +
				"* Cluster operators dns, network are updating versions\n" +
				"* Could not update pod \"x\" (1 of 2)\n" +
				"* boom",
			wantEffect: EffectFail,
		},
		{
			name:       "the same reason on another kind does not condense",
			errs:       []error{coUpdating("network", EffectNone), notCO},
			wantReason: ReasonMultipleErrors,
			wantMsg: "Multiple errors are preventing progress:\n" +
				"* Cluster operator etcd is updating versions\n" +
				"* Cluster operator network is updating versions",
			wantEffect: EffectFail,
		},
		{
			name:       "bullets are de-duplicated",
			errs:       []error{boom, errors.New("boom"), other},
			wantReason: ReasonMultipleErrors,
			wantMsg:    "Multiple errors are preventing progress:\n* Could not update pod \"x\" (1 of 2)\n* boom",
			wantEffect: EffectFail,
		},
		{name: "identical messages are one error", errs: []error{boom, errors.New("boom")}, wantSame: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := summarize(tt.errs)
			switch {
			case tt.wantNil:
				require.NoError(t, err)
				return
			case tt.wantSame != nil:
				require.Same(t, tt.wantSame, err)
				return
			}
			var uErr *UpdateError
			require.ErrorAs(t, err, &uErr)
			assert.Equal(t, tt.wantReason, uErr.Reason)
			assert.Equal(t, tt.wantMsg, uErr.Error())
			assert.Equal(t, tt.wantEffect, uErr.Effect)
			if tt.wantNames != nil {
				assert.Equal(t, tt.wantNames, uErr.Names)
			}
			for _, e := range tt.errs {
				if e != nil && !isContextError(e) {
					assert.ErrorIs(t, err, e, "the summary wraps every error it summarizes")
				}
			}
		})
	}
}

// TestReasonForError: the reasons and the words of the cluster-version operator's
// reasonForPayloadSyncError, for every error it knows.
func TestReasonForError(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err    error
		reason string
		cause  string
	}{
		{apierrors.NewNotFound(gr, "x"), "UpdatePayloadResourceNotFound", "resource may have been deleted"},
		{apierrors.NewAlreadyExists(gr, "x"), "UpdatePayloadResourceNotFound", "resource may have been deleted"},
		{apierrors.NewConflict(gr, "x", errors.New("c")), "UpdatePayloadResourceConflict", "someone else is updating this resource"},
		{apierrors.NewServiceUnavailable("down"), "UpdatePayloadClusterDown", "the server is down or not responding"},
		{apierrors.NewInternalError(errors.New("x")), "UpdatePayloadClusterError", "the server is reporting an internal error"},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil), "UpdatePayloadResourceInvalid", "the object is invalid, possibly due to local cluster configuration"},
		{apierrors.NewUnauthorized("who"), "UpdatePayloadClusterUnauthorized", "could not authenticate to the server"},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), "UpdatePayloadResourceForbidden", "the server has forbidden updates to this resource"},
		{apierrors.NewTooManyRequests("slow down", 1), "UpdatePayloadClusterOverloaded", "the server is overloaded and is not accepting updates"},
		{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Widget"}}, "UpdatePayloadResourceTypeMissing", "the server does not recognize this resource, check extension API servers"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "UpdatePayloadInterrupted", ""},
		{errors.New("other"), "UpdatePayloadFailed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			reason, cause := reasonForError(tt.err)
			assert.Equal(t, tt.reason, reason)
			assert.Equal(t, tt.cause, cause)
		})
	}
}

func TestEffect(t *testing.T) {
	effects := []Effect{EffectReport, EffectNone, EffectFailAfterInterval, EffectFail}
	for i := 1; i < len(effects); i++ {
		assert.Less(t, effects[i-1].rank(), effects[i].rank(), "%s weighs less than %s", effects[i-1], effects[i])
		assert.Equal(t, effects[i], stronger(effects[i-1], effects[i]))
		assert.Equal(t, effects[i], stronger(effects[i], effects[i-1]))
	}
	for _, e := range effects {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		var back Effect
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, e, back)
	}
	assert.Equal(t, EffectFail.rank(), Effect("Sometimes").rank(), "an unknown effect weighs as Fail")

	assert.Equal(t, EffectReport, effectOf(nil))
	assert.Equal(t, EffectFail, effectOf(errors.New("x")))
	assert.Equal(t, EffectNone, effectOf(fmt.Errorf("wrapped: %w", &UpdateError{Effect: EffectNone})))
}

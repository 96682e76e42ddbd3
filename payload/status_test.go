package payload

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatusDeepCopyAndJSON(t *testing.T) {
	s := &Status{
		Generation: 3, State: StateUpdating, Done: 4, Total: 10, Completed: 1,
		Failure:      NewFailure(&UpdateError{Reason: "UpdatePayloadResourceNotFound", Message: "gone", Effect: EffectFailAfterInterval}),
		LastProgress: metav1.NewTime(t0),
		Actual:       Release{Version: "1.0.0", Image: "r/p:1"},
	}
	c := s.DeepCopy()
	c.Failure.Message = "changed"
	assert.Equal(t, "gone", s.Failure.Message, "the copy owns its failure")
	assert.Nil(t, (*Status)(nil).DeepCopy())

	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"generation":3,"state":"Updating","done":4,"total":10,"completed":1,
		"failure":{"reason":"UpdatePayloadResourceNotFound","message":"gone","effect":"FailAfterInterval"},
		"lastProgress":"2026-01-02T03:04:05Z","actual":{"version":"1.0.0","image":"r/p:1"}}`, string(b))
	var back Status
	require.NoError(t, json.Unmarshal(b, &back))
	back.Failure.Err = s.Failure.Err
	assert.True(t, s.LastProgress.Equal(&back.LastProgress))
	back.LastProgress = s.LastProgress
	assert.Equal(t, *s, back)
}

func TestNewFailure(t *testing.T) {
	assert.Nil(t, NewFailure(nil))
	f := NewFailure(errors.New("plain"))
	assert.Equal(t, Failure{Reason: "UpdatePayloadFailed", Message: "plain", Effect: EffectFail, Err: f.Err}, *f)
	assert.Equal(t, 0.4, Status{Done: 4, Total: 10}.Fraction())
	assert.Zero(t, Status{Done: 4}.Fraction())
	assert.Equal(t, `version="1" image="i"`, Release{Version: "1", Image: "i"}.String())
}

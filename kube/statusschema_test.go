package kube

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge"
)

// pruningClient is an object client whose apiserver prunes the status
// fields its schema lacks (prune, at the top of the status), or that has no
// status subresource at all (noSubresource).
type pruningClient struct {
	obj           *unstructured.Unstructured
	prune         []string
	noSubresource bool
	resource      string
}

func (c *pruningClient) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: "example.com", Resource: c.resource}
}

func (c *pruningClient) Get(context.Context) (*unstructured.Unstructured, error) {
	return c.obj.DeepCopy(), nil
}

func (c *pruningClient) UpdateStatus(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if c.noSubresource {
		return nil, apierrors.NewNotFound(c.GroupResource(), "")
	}
	out := obj.DeepCopy()
	for _, f := range c.prune {
		unstructured.RemoveNestedField(out.Object, "status", f)
	}
	out.SetResourceVersion(fmt.Sprint(len(out.GetResourceVersion()) + 1))
	c.obj = out.DeepCopy()
	return out, nil
}

func widget() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
	obj.SetNamespace("ns")
	obj.SetName("w")
	obj.SetResourceVersion("1")
	return obj
}

func TestStatusSchemaDropsAreReportedOncePerResourceAndField(t *testing.T) {
	ctx := context.Background()
	client := &pruningClient{obj: widget(), prune: []string{"nodes"}, resource: "widgets-pruned"}
	s, err := NewObjectStatusStoreFor[engineStatus](client, "widgets-pruned.example.com ns/w")
	require.NoError(t, err)
	_, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)

	rv, err = s.UpdateStatus(ctx, engineStatus{Revision: 2, Nodes: []string{"a"}}, rv)
	var se *StatusSchemaError
	require.ErrorAs(t, err, &se, "the first write that drops a field reports it")
	assert.ErrorIs(t, err, ErrStatusSchema)
	assert.Equal(t, []string{"status.nodes"}, se.Fields)
	assert.Equal(t, "widgets-pruned.example.com ns/w", se.Resource)
	assert.NotEmpty(t, rv, "the write happened: its resource version is returned")
	assert.Equal(t, converge.Event{Type: converge.EventTypeWarning, Reason: ReasonStatusSchemaMismatch, Message: se.Error()}, se.Event())
	assert.Contains(t, se.Error(), "status.nodes")

	got, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, engineStatus{Revision: 2}, got, "the status reads back without the dropped field")
	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 3, Nodes: []string{"b"}}, rv)
	assert.NoError(t, err, "a field already reported is not reported again")

	other, err := NewObjectStatusStoreFor[engineStatus](&pruningClient{obj: widget(), prune: []string{"nodes"}, resource: "gadgets-pruned"}, "gadgets-pruned.example.com ns/w")
	require.NoError(t, err)
	_, err = other.UpdateStatus(ctx, engineStatus{Nodes: []string{"a"}}, "1")
	assert.ErrorIs(t, err, ErrStatusSchema, "another resource's schema is reported on its own")
}

func TestStatusWithoutSubresourceIsNamedNotNotFound(t *testing.T) {
	ctx := context.Background()
	s, err := NewObjectStatusStoreFor[engineStatus](&pruningClient{obj: widget(), noSubresource: true, resource: "plain"}, "plain.example.com ns/w")
	require.NoError(t, err)
	for range 2 {
		_, err = s.UpdateStatus(ctx, engineStatus{Revision: 1}, "1")
		var se *StatusSchemaError
		require.ErrorAs(t, err, &se, "every write fails: nothing was written")
		assert.True(t, se.NoSubresource)
		assert.Contains(t, err.Error(), "has no status subresource")
	}
}

func TestCheckStatusWrittenSeesOnlyDrops(t *testing.T) {
	tests := []struct {
		name      string
		written   any
		returned  any
		wantDrops []string
	}{
		{name: "the same status drops nothing", written: map[string]any{"a": "1"}, returned: map[string]any{"a": "1"}},
		{name: "a default the apiserver added is no drop", written: map[string]any{"a": "1"}, returned: map[string]any{"a": "1", "b": "x"}},
		{name: "a changed value is no drop", written: map[string]any{"a": int64(1)}, returned: map[string]any{"a": float64(1)}},
		{name: "a null is no drop", written: map[string]any{"a": nil}, returned: map[string]any{}},
		{name: "a missing top field", written: map[string]any{"inFlight": map[string]any{"owner": "x"}}, returned: map[string]any{},
			wantDrops: []string{"status.inFlight"}},
		{name: "a field of list items, named once", written: map[string]any{"nodes": []any{map[string]any{"n": "a", "seen": true}, map[string]any{"n": "b", "seen": true}}},
			returned:  map[string]any{"nodes": []any{map[string]any{"n": "a"}, map[string]any{"n": "b"}}},
			wantDrops: []string{"status.nodes[].seen"}},
		{name: "a status dropped whole", written: map[string]any{"a": "1"}, returned: nil, wantDrops: []string{"status.a"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStatusWritten(fmt.Sprintf("check-%d.example.com", i), "x", []string{"status"}, tt.written, tt.returned)
			if tt.wantDrops == nil {
				assert.NoError(t, err)
				return
			}
			var se *StatusSchemaError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.wantDrops, se.Fields)
		})
	}
}

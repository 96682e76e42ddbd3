package crtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// IgnoreStoppedMetadataWatch ignores a filtering watch's goroutine blocked
// on an event nobody reads after the watch stopped, and nothing else: a
// watch left running, with the reader an informer runs on it, is a leak
// under it.
func TestIgnoreStoppedMetadataWatchIgnoresOnlyTheBlockedFilter(t *testing.T) {
	keep := func(e watch.Event) (watch.Event, bool) { return e, true }
	before := goleak.IgnoreCurrent()

	running := watch.NewFake()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for range watch.Filter(running, keep).ResultChan() {
		}
	}()
	running.Add(&corev1.Secret{})
	assert.Error(t, goleak.Find(before, IgnoreStoppedMetadataWatch()), "a running watch and its reader are a leak")
	running.Stop()
	<-read
	require.NoError(t, goleak.Find(before), "the filter and its reader end with the watch")

	source := watch.NewFake()
	filtered := watch.Filter(source, keep)
	source.Add(&corev1.Secret{}) // the filter takes it and blocks handing it on
	source.Stop()
	assert.Error(t, goleak.Find(before), "the stopped filter's goroutine is left")
	assert.NoError(t, goleak.Find(before, IgnoreStoppedMetadataWatch()))

	<-filtered.ResultChan() // the event the filter held: its goroutine ends
	_, open := <-filtered.ResultChan()
	assert.False(t, open)
	assert.NoError(t, goleak.Find(before))
}

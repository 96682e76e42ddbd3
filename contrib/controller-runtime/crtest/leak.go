package crtest

import "go.uber.org/goleak"

// IgnoreStoppedMetadataWatch is the goleak option for the one goroutine a
// stopped manager can leave behind on its own: that of a metadata-only watch
// (crconverge.AddonOptions.Watches, or controller-runtime's OnlyMetadata),
// which controller-runtime wraps in apimachinery's watch.Filter to set the
// events' kind. The filter's goroutine forwards each event on a channel
// without a way to give up, and the informer stops reading before it stops
// the watch; the stop itself usually produces one last event (the stream's
// read fails with the cancelled context, which the watch reports as an
// Error event), so the goroutine is left blocked on that send for good
// (kubernetes/kubernetes#113254). It holds one event and nothing else, and
// nothing an operator or a test can do stops it, so a test package whose
// operator watches a kind metadata-only passes this option to
// goleak.VerifyTestMain:
//
//	goleak.VerifyTestMain(crtest.WithEnvironment(m, env), crtest.IgnoreStoppedMetadataWatch())
//
// It ignores only goroutines whose top function is watch.Filter's loop;
// a reflector, an informer or a manager left running is still a leak.
func IgnoreStoppedMetadataWatch() goleak.Option {
	return goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")
}

package fake_test

import (
	"context"
	"fmt"

	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

// A payload worker's status writer checked before a host relies on it: here
// kube.LatestStatusWriter over a ConfigMap, with a second writer on its own
// store standing for another replica.
func ExampleTestPayloadStatusWriter() {
	ctx := context.Background()
	client := k8sfake.NewClientset()
	fake.EnforceResourceVersions(client) // the fake clientset keeps no resource versions of its own
	newStore := func() *kube.ConfigMapStatusStore[payload.Status] {
		s, _ := kube.NewConfigMapStatusStore[payload.Status](client.CoreV1(), "operator", "payload-status", "") // a client, a namespace and a name: no error
		return s
	}
	w := kube.LatestStatusWriter[payload.Status]{Store: newStore()}
	foreign := kube.LatestStatusWriter[payload.Status]{Store: newStore()}
	read := func(ctx context.Context) (payload.Status, error) {
		st, _, err := newStore().GetStatus(ctx)
		return st, err
	}
	fmt.Println("conforms:", fake.TestPayloadStatusWriter(ctx, w, foreign, read) == nil)

	forgetful := payload.StatusWriterFunc(func(context.Context, payload.Status) error { return nil })
	fmt.Println("a writer that drops the status fails:", fake.TestPayloadStatusWriter(ctx, forgetful, foreign, read) != nil)
	// Output:
	// conforms: true
	// a writer that drops the status fails: true
}

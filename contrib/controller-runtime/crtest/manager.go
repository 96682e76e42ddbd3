package crtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/converge-dev/converge/internal/input"
)

// NewManager returns a manager for tests on controller-runtime's fake
// client c, such as crconverge's NewRolloutController, NewAddonController
// and NewPayloadController build controllers on: it registers controllers,
// watches and runnables as a manager does, with c's scheme and REST mapper
// (controller names may repeat, so that every test builds its own), and
// hands out c as its client and its API reader and rec (nil: one that
// drops every event) as every event recorder.
//
// It never starts: there is no API server behind it (Start is an error),
// so a test calls the Reconcile of the controllers built on it itself, and
// the controller's watches and runnables never run. Give c the status
// subresources of the kinds the controllers write (the fake client's
// WithStatusSubresource) and a REST mapper that knows them (WithRESTMapper).
func NewManager(c client.WithWatch, rec recorder.EventRecorder) (manager.Manager, error) {
	if input.IsNil(c) {
		return nil, input.Invalidf("crtest", "NewManager", "nil client")
	}
	if input.IsNil(rec) {
		rec = &events.FakeRecorder{}
	}
	mgr, err := manager.New(&rest.Config{Host: "https://fake-client.invalid"}, manager.Options{
		Scheme:                 c.Scheme(),
		MapperProvider:         func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return c.RESTMapper(), nil },
		NewClient:              func(*rest.Config, client.Options) (client.Client, error) { return c, nil },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("crtest: NewManager: %w", err)
	}
	return &fakeManager{Manager: mgr, client: c, recorder: rec}, nil
}

// fakeManager is NewManager's manager.
type fakeManager struct {
	manager.Manager
	client   client.WithWatch
	recorder recorder.EventRecorder
}

// GetClient returns the fake client.
func (m *fakeManager) GetClient() client.Client { return m.client }

// GetAPIReader returns the fake client.
func (m *fakeManager) GetAPIReader() client.Reader { return m.client }

// GetEventRecorder returns NewManager's recorder, whatever the name.
func (m *fakeManager) GetEventRecorder(string) recorder.EventRecorder { return m.recorder }

// Start refuses to start: no API server is behind the fake client.
func (m *fakeManager) Start(context.Context) error {
	return errors.New("crtest: a manager on the fake client does not start: call its controllers' Reconcile")
}

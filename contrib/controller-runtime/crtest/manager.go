package crtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
)

// NewManager returns a manager for tests on controller-runtime's fake
// client c, such as crconverge's NewRolloutController, NewAddonController
// and NewPayloadController build controllers on: it registers controllers
// and runnables as a manager does, with c's scheme and REST mapper
// (controller names may repeat, so that every test builds its own), and
// hands out c as its client and its API reader and rec (nil: one that
// drops every event) as every event recorder.
//
// There is no API server behind it, so its controllers never start: a test
// calls their Reconcile itself. Start runs the other runnables added to it
// (the payload worker of NewPayloadController, say) until its context
// ends, as the leader would, and returns once they all have. Give c the
// status subresources of the kinds the controllers write (the fake
// client's WithStatusSubresource) and a REST mapper that knows them
// (WithRESTMapper).
func NewManager(c client.WithWatch, rec recorder.EventRecorder) (manager.Manager, error) {
	if check.IsNil(c) {
		return nil, converge.Invalidf("crtest", "NewManager", "nil client")
	}
	if check.IsNil(rec) {
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

	mu        sync.Mutex
	runnables []manager.Runnable // but the controllers
	started   bool
}

// GetClient returns the fake client.
func (m *fakeManager) GetClient() client.Client { return m.client }

// GetAPIReader returns the fake client.
func (m *fakeManager) GetAPIReader() client.Reader { return m.client }

// GetEventRecorder returns NewManager's recorder, whatever the name.
func (m *fakeManager) GetEventRecorder(string) recorder.EventRecorder { return m.recorder }

// Add keeps r for Start, unless it is a controller, which is registered and
// never started.
func (m *fakeManager) Add(r manager.Runnable) error {
	if _, ok := r.(controller.Controller); ok {
		return m.Manager.Add(r)
	}
	if check.IsNil(r) {
		return converge.Invalidf("crtest", "runnable", "nil runnable")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("crtest: a runnable added to a started manager")
	}
	m.runnables = append(m.runnables, r)
	return nil
}

// Start runs every runnable Add kept until ctx ends or one of them fails,
// which stops the others, as a manager does, and returns once all have
// returned, with the first error. It runs once.
func (m *fakeManager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("crtest: the manager is already started")
	}
	m.started = true
	runnables := m.runnables
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runnables))
	var wg sync.WaitGroup
	for _, r := range runnables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	close(errs)
	if err, ok := <-errs; ok {
		return fmt.Errorf("crtest: a runnable failed: %w", err)
	}
	return nil
}

package crtest

import (
	"fmt"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/testenv"
)

// NewProxyManager returns a manager for one instance of the operator under
// test, identity, whose every request (its client's, its caches', its
// informers') goes through proxy, a testenv.FaultProxy in front of the
// test's API server (testenv.NewFaultProxy(env.Config, plan)). Start it,
// add the operator's controllers to it as main does, and when the proxy
// cuts the instance off (proxy.Crashed(identity)), stop it and start a
// fresh instance under a new identity: it knows only what the cluster
// holds.
//
// opts are the operator's own; as every instance runs in the test's
// process, the manager serves no metrics and no health probes unless opts
// ask for them, and controller names may repeat across instances.
func NewProxyManager(proxy *testenv.FaultProxy, identity string, opts manager.Options) (manager.Manager, error) {
	cfg := proxy.Config(identity)
	if cfg == nil {
		return nil, converge.Invalidf("crtest", "NewProxyManager arguments", "proxy is not made by testenv.NewFaultProxy")
	}
	if opts.Metrics.BindAddress == "" {
		opts.Metrics.BindAddress = "0"
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	if opts.Controller.SkipNameValidation == nil {
		opts.Controller.SkipNameValidation = ptr.To(true)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("crtest: NewProxyManager: %w", err)
	}
	return mgr, nil
}

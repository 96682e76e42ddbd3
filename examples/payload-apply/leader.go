package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseName is the Lease the instances of the example compete for.
const leaseName = "payload-apply"

// errLostLease ends an instance that stopped holding the Lease before its work was done.
var errLostLease = errors.New("lost the lease before the work was done")

// election configures the leader election of the instances of the example.
type election struct {
	// leases reaches the Lease.
	leases coordinationv1client.LeasesGetter
	// namespace is the namespace of the Lease.
	namespace string
	// identity names this instance in the Lease.
	identity string
	// leaseDuration, renewDeadline and retryPeriod are the timings of client-go's
	// leaderelection.LeaderElectionConfig.
	leaseDuration, renewDeadline, retryPeriod time.Duration
	// report, when set, is told who leads.
	report func(format string, args ...any)
}

// defaultIdentity is the host name and the process id, unique among running instances.
func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s_%d", host, os.Getpid())
}

// runElected runs work once, only while this instance holds the Lease payload-apply,
// and returns work's error. When the lease is lost first, work's context is cancelled,
// runElected waits for work to return and returns errLostLease: the instance stops
// acting. When ctx ends before this instance leads, it returns ctx's error. The Lease is
// released as soon as work has returned, so that another instance need not wait for
// it to expire.
func runElected(ctx context.Context, e election, work func(context.Context) error) error {
	report := e.report
	if report == nil {
		report = func(string, ...any) {}
	}
	electionCtx, stopElection := context.WithCancel(ctx)
	defer stopElection()

	var (
		mu      sync.Mutex
		over    bool // the elector has returned: work must not start any more
		led     bool
		done    bool
		workErr error
		running sync.WaitGroup
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: leaseName},
			Client:     e.leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
		},
		LeaseDuration:   e.leaseDuration,
		RenewDeadline:   e.renewDeadline,
		RetryPeriod:     e.retryPeriod,
		ReleaseOnCancel: true,
		Name:            leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if over {
					mu.Unlock()
					return
				}
				led = true
				running.Add(1)
				mu.Unlock()
				defer running.Done()

				report("%s leads: applying the payload", e.identity)
				err := work(leadCtx)
				mu.Lock()
				if leadCtx.Err() == nil {
					done, workErr = true, err
				}
				mu.Unlock()
				// Work is over: stop renewing and release the Lease.
				stopElection()
			},
			// Required by client-go; runElected learns that leading stopped from Run returning.
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != e.identity {
					report("%s leads, %s waits", identity, e.identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electionCtx)

	mu.Lock()
	over = true
	mu.Unlock()
	running.Wait()
	switch {
	case done:
		return workErr
	case led && ctx.Err() == nil:
		return errLostLease
	}
	return ctx.Err()
}

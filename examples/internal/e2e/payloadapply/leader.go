package payloadapply

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

// LeaseName is the Lease the instances of the example compete for.
const LeaseName = "payload-apply"

// ErrLostLease ends an instance that stopped holding the Lease before its work was done.
var ErrLostLease = errors.New("lost the lease before the work was done")

// Election configures the leader election of the instances of the example.
type Election struct {
	// Leases reaches the Lease.
	Leases coordinationv1client.LeasesGetter
	// Namespace is the namespace of the Lease.
	Namespace string
	// Identity names this instance in the Lease.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are the timings of client-go's
	// leaderelection.LeaderElectionConfig.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Report, when set, is told who leads.
	Report func(format string, args ...any)
}

// DefaultIdentity is the host name and the process id, unique among running instances.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s_%d", host, os.Getpid())
}

// RunElected runs work once, only while this instance holds the Lease payload-apply,
// and returns work's error. When the lease is lost first, work's context is cancelled,
// RunElected waits for work to return and returns ErrLostLease: the instance stops
// acting. When ctx ends before this instance leads, it returns ctx's error. The Lease is
// released as soon as work has returned, so that another instance need not wait for
// it to expire.
func RunElected(ctx context.Context, e Election, work func(context.Context) error) error {
	report := e.Report
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
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: LeaseName},
			Client:     e.Leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
		},
		LeaseDuration:   e.LeaseDuration,
		RenewDeadline:   e.RenewDeadline,
		RetryPeriod:     e.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            LeaseName,
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

				report("%s leads: applying the payload", e.Identity)
				err := work(leadCtx)
				mu.Lock()
				if leadCtx.Err() == nil {
					done, workErr = true, err
				}
				mu.Unlock()
				// Work is over: stop renewing and release the Lease.
				stopElection()
			},
			// Required by client-go; RunElected learns that leading stopped from Run returning.
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != e.Identity {
					report("%s leads, %s waits", identity, e.Identity)
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
		return ErrLostLease
	}
	return ctx.Err()
}

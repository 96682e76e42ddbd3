//go:build !integration

package payloadapply

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// testElection is an election on a fake clientset with timings short enough for a unit
// test; client-go's elector runs on the real clock.
func testElection(leases *fake.Clientset, identity string) Election {
	return Election{
		Leases:        leases.CoordinationV1(),
		Namespace:     "default",
		Identity:      identity,
		LeaseDuration: 600 * time.Millisecond,
		RenewDeadline: 400 * time.Millisecond,
		RetryPeriod:   100 * time.Millisecond,
	}
}

// heldLease is a Lease that other holds and renewed just now.
func heldLease(other string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: LeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(other),
			LeaseDurationSeconds: ptr.To[int32](60),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
}

func quietContext() context.Context {
	return klog.NewContext(context.Background(), logr.Discard())
}

func TestRunElectedRunsWorkAndReleasesTheLease(t *testing.T) {
	errWork := errors.New("work failed")
	tests := []struct {
		name    string
		workErr error
	}{
		{"work succeeds", nil},
		{"work fails", errWork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leases := fake.NewClientset()
			var (
				mu      sync.Mutex
				reports []string
				holder  string
			)
			e := testElection(leases, "me")
			e.Report = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, format)
			}
			err := RunElected(quietContext(), e, func(ctx context.Context) error {
				lease, err := leases.CoordinationV1().Leases("default").Get(ctx, LeaseName, metav1.GetOptions{})
				if assert.NoError(t, err) {
					holder = ptr.Deref(lease.Spec.HolderIdentity, "")
				}
				return tt.workErr
			})
			assert.Equal(t, tt.workErr, err)
			assert.Equal(t, "me", holder, "work ran without holding the Lease")
			lease, err := leases.CoordinationV1().Leases("default").Get(context.Background(), LeaseName, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Empty(t, ptr.Deref(lease.Spec.HolderIdentity, ""), "the Lease was not released")
			mu.Lock()
			defer mu.Unlock()
			assert.Contains(t, reports, "%s leads: applying the payload")
		})
	}
}

func TestRunElectedWaitsForAHeldLease(t *testing.T) {
	leases := fake.NewClientset(heldLease("other"))
	ctx, cancel := context.WithTimeout(quietContext(), 500*time.Millisecond)
	defer cancel()
	ran := false
	err := RunElected(ctx, testElection(leases, "me"), func(context.Context) error {
		ran = true
		return nil
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, ran, "work ran while another instance held the Lease")
}

func TestRunElectedStopsWhenTheLeaseIsLost(t *testing.T) {
	leases := fake.NewClientset()
	// Once work runs, the apiserver refuses every renewal: the lease runs out.
	var working atomic.Bool
	leases.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if working.Load() {
			return true, nil, apierrors.NewServiceUnavailable("etcd is gone")
		}
		return false, nil, nil
	})
	var workCtxErr error
	err := RunElected(quietContext(), testElection(leases, "me"), func(ctx context.Context) error {
		working.Store(true)
		<-ctx.Done()
		workCtxErr = ctx.Err()
		return ctx.Err()
	})
	assert.ErrorIs(t, err, ErrLostLease)
	assert.ErrorIs(t, workCtxErr, context.Canceled, "work was not stopped")
}

func TestRunElectedRejectsBadTimings(t *testing.T) {
	e := testElection(fake.NewClientset(), "me")
	e.RenewDeadline = e.LeaseDuration
	err := RunElected(quietContext(), e, func(context.Context) error { return nil })
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "leader election: "), err.Error())
}

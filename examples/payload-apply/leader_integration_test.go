//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	e2e "github.com/converge-dev/converge/examples/internal/e2e/payloadapply"
	"github.com/converge-dev/converge/payload/manifest"
)

// instance is one running process of the example.
type instance struct {
	identity string
	cmd      *exec.Cmd
	out      *lockedBuffer
	exited   chan struct{}
	err      error // of cmd.Wait, set when exited is closed
}

// lockedBuffer is the combined output of a process, readable while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startInstance starts the example binary with leader election and short lease
// timings; t.Cleanup kills it and waits for it.
func startInstance(t *testing.T, binary, identity string) *instance {
	t.Helper()
	in := &instance{identity: identity, out: &lockedBuffer{}, exited: make(chan struct{})}
	in.cmd = exec.Command(binary,
		"-kubeconfig", env.Kubeconfig,
		"-leader-elect", "-identity", identity,
		"-lease-duration", "4s", "-renew-deadline", "3s", "-retry-period", "1s",
		"-interval", "1s")
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	require.NoError(t, in.cmd.Start())
	go func() {
		in.err = in.cmd.Wait()
		close(in.exited)
	}()
	t.Cleanup(func() {
		_ = in.cmd.Process.Kill()
		<-in.exited
	})
	return in
}

// waitExit waits for the instance to exit and returns cmd.Wait's error.
func (in *instance) waitExit(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-in.exited:
		return in.err
	case <-time.After(timeout):
		require.FailNow(t, "the instance did not exit", "%s after %s:\n%s", in.identity, timeout, in.out)
		return nil
	}
}

func (in *instance) running() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// TestLeaderElection runs two instances of the example (the test plays the deployment
// controller): only the leader applies, up to the Job barrier; once it is killed, the other takes the Lease, finishes the work from
// the status the first one persisted, and exits 0 after releasing the Lease.
func TestLeaderElection(t *testing.T) {
	c := connect(t)
	manifests := loadExample(t)
	c.reset(t, manifests)
	binary := buildExample(t)
	deployments := c.startJobController(t, false)

	// Identities new to this run: the Namespace, which reset keeps, remembers the field
	// managers of earlier runs.
	instances := map[string]*instance{}
	for _, name := range []string{"a", "b"} {
		identity := fmt.Sprintf("instance-%s-%d", name, time.Now().UnixNano())
		instances[identity] = startInstance(t, binary, identity)
	}
	ctx := context.Background()
	holder := func(ctx context.Context) (string, error) {
		lease, err := c.Typed.CoordinationV1().Leases("default").Get(ctx, e2e.LeaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		if err != nil || lease.Spec.HolderIdentity == nil {
			return "", err
		}
		return *lease.Spec.HolderIdentity, nil
	}
	var leaderID string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, pollInterval, pollTimeout, true, func(ctx context.Context) (bool, error) {
		id, err := holder(ctx)
		leaderID = id
		return id != "", err
	}), "nobody took the Lease")
	require.Contains(t, instances, leaderID)
	leader := instances[leaderID]
	var follower *instance
	for id, in := range instances {
		if id != leaderID {
			follower = in
		}
	}

	// The leader applies everything before the Job and waits for it.
	var beforeJob []manifest.Manifest
	for _, m := range manifests {
		if level, _, _ := manifest.ParseRunLevel(m.File); level <= 30 {
			beforeJob = append(beforeJob, m)
		}
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, pollInterval, pollTimeout, true, func(context.Context) (bool, error) {
		return len(c.live(t, beforeJob)) == len(beforeJob) && strings.Contains(leader.out.String(), "is not ready: JobNotComplete: has not completed"), nil
	}), "the leader did not reach the Job:\n%s", leader.out)

	// Only the leader wrote: every object, and the status, is managed by it alone, and
	// nothing after the Job exists yet.
	leaderManager := "payload-apply/" + leader.identity
	objects := c.live(t, manifests)
	assert.Len(t, objects, len(beforeJob), "objects after the Job exist before it completed")
	followerManager := "payload-apply/" + follower.identity
	for ref, obj := range objects {
		if obj.GetKind() == "Namespace" {
			assert.Contains(t, managers(obj), leaderManager, ref)
			assert.NotContains(t, managers(obj), followerManager, ref)
			continue
		}
		assert.Equal(t, []string{leaderManager}, managers(obj), ref)
	}
	status, err := c.Typed.CoreV1().ConfigMaps("default").Get(ctx, e2e.StatusConfigMap, metav1.GetOptions{})
	require.NoError(t, err)
	statusManagers := make([]string, 0, len(status.ManagedFields))
	for _, f := range status.ManagedFields {
		statusManagers = append(statusManagers, f.Manager)
	}
	assert.Equal(t, []string{leaderManager}, statusManagers)
	assert.NoError(t, wait.PollUntilContextTimeout(ctx, pollInterval, pollTimeout, true, func(context.Context) (bool, error) {
		return strings.Contains(follower.out.String(), leader.identity+" leads, "+follower.identity+" waits"), nil
	}), "the follower did not see the leader:\n%s", follower.out)
	assert.True(t, follower.running(), "the follower exited:\n%s", follower.out)
	assert.NotContains(t, follower.out.String(), "applying the payload")

	// Kill the leader mid-apply, then let the Job complete.
	require.NoError(t, leader.cmd.Process.Signal(syscall.SIGKILL))
	var exitErr *exec.ExitError
	require.True(t, errors.As(leader.waitExit(t, pollTimeout), &exitErr), "the leader was not killed")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, pollInterval, pollTimeout, true, func(ctx context.Context) (bool, error) {
		_, _, err := c.completeJob(ctx)
		return err == nil, err
	}))

	// The follower takes the Lease, finishes the work and releases the Lease.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, pollInterval, pollTimeout, true, func(ctx context.Context) (bool, error) {
		id, err := holder(ctx)
		return id == follower.identity, err
	}), "the follower did not take the Lease:\n%s", follower.out)
	require.NoError(t, follower.waitExit(t, pollTimeout), follower.out.String())
	out := follower.out.String()
	assert.Contains(t, out, follower.identity+" leads: applying the payload")
	assert.Contains(t, out, "persisted status: release 1.0.0, Initializing")
	assert.Contains(t, out, "apply (Reconciling) done: 31/31 manifests")
	assert.Contains(t, out, "30 of 30 objects are in the cluster")

	objects = c.live(t, manifests)
	require.Len(t, objects, len(manifests))
	for _, m := range e2e.StampRelease(manifests, "1.0.0") {
		obj := objects[m.Ref()]
		assertContains(t, m.Ref(), m.Object, obj)
		if m.GVK.Kind != "Job" { // a Job is applied once, by whoever created it
			assert.True(t, slices.Contains(managers(obj), followerManager), "%s: managers %v", m.Ref(), managers(obj))
		}
	}
	id, err := holder(ctx)
	require.NoError(t, err)
	assert.Empty(t, id, "the follower did not release the Lease")
	_, _, err = deployments.resourceVersions()
	assert.NoError(t, err, "the Deployments were rolled out")
}

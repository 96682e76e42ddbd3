package rollout

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
)

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		wantErr bool
	}{
		{name: "zero value is valid", p: Policy{}},
		{name: "everything set", p: Policy{MaxUnavailable: 2, MaxInstallerRetries: 3, InstallerPendingTimeout: dur(time.Minute), OperandReadyTimeout: dur(time.Minute), MinReadyDuration: dur(time.Second), HoldDegradedAfter: dur(time.Hour), Paused: true}},
		{name: "negative maxUnavailable", p: Policy{MaxUnavailable: -1}, wantErr: true},
		{name: "negative retries", p: Policy{MaxInstallerRetries: -1}, wantErr: true},
		{name: "negative timeout", p: Policy{InstallerPendingTimeout: dur(-time.Second)}, wantErr: true},
		{name: "negative operand timeout", p: Policy{OperandReadyTimeout: dur(-time.Second)}, wantErr: true},
		{name: "negative hold", p: Policy{HoldDegradedAfter: dur(-time.Second)}, wantErr: true},
		{name: "negative soak", p: Policy{MinReadyDuration: dur(-time.Second)}, wantErr: true},
		{name: "bad backoff", p: Policy{InstallerBackoff: converge.Backoff{FactorPercent: 10}}, wantErr: true},
		{name: "negative backoff jitter", p: Policy{InstallerBackoff: converge.Backoff{JitterPercent: ptr.To[int32](-1)}}, wantErr: true},
		{name: "negative fallback timeout", p: Policy{FallbackTimeout: dur(-time.Second)}, wantErr: true},
		{name: "bad fallback backoff", p: Policy{FallbackBackoff: converge.Backoff{Initial: dur(time.Hour), Max: dur(time.Minute)}}, wantErr: true},
		{name: "negative fallback backoff", p: Policy{FallbackBackoff: converge.Backoff{Initial: dur(-time.Minute)}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.wantErr {
				assert.ErrorIs(t, err, converge.ErrInvalid)
				assert.Regexp(t, "^rollout: invalid policy: ", err.Error())
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestPolicyUnavailable(t *testing.T) {
	assert.Equal(t, 1, Policy{}.maxUnavailable())
	assert.Equal(t, 3, Policy{MaxUnavailable: 3}.maxUnavailable())
}

func TestPolicyRetriesExhausted(t *testing.T) {
	tests := []struct {
		name    string
		retries int32
		n       NodeStatus
		want    bool
	}{
		{name: "unlimited", retries: 0, n: failed(node("a", 1, 2), 2, 100, ReasonInstallerPodFailed, t0)},
		{name: "within the limit", retries: 2, n: failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0)},
		{name: "beyond the limit", retries: 2, n: failed(node("a", 1, 2), 2, 3, ReasonInstallerPodFailed, t0), want: true},
		{name: "failures of another revision", retries: 2, n: failed(node("a", 1, 3), 2, 3, ReasonInstallerPodFailed, t0)},
		{name: "not in transition, failed revision not reached", retries: 2, n: failed(node("a", 1, 0), 2, 3, ReasonOperandFailed, t0), want: true},
		{name: "not in transition, past the failed revision", retries: 2, n: failed(node("a", 2, 0), 2, 3, ReasonOperandFailed, t0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Policy{MaxInstallerRetries: tt.retries}.retriesExhausted(tt.n))
		})
	}
}

// TestPolicyValidateNamesEveryProblem: one error names every bad field, a
// backoff's problems under installerBackoff.
func TestPolicyValidateNamesEveryProblem(t *testing.T) {
	err := Policy{MaxUnavailable: -1, HoldDegradedAfter: dur(-time.Second), InstallerBackoff: converge.Backoff{FactorPercent: 10}}.Validate()
	assert.EqualError(t, err, "rollout: invalid policy: maxUnavailable -1 is negative; holdDegradedAfter -1s is negative; "+
		"installerBackoff: factorPercent 10 is below 100")
}

// TestInstallerBackoffParityWithLibraryGo pins the default sequence to
// library-go's installer controller: backOffDuration(10s, 1.5, 10min)
// evaluated at the failure count, so the first retry waits 15 s.
func TestInstallerBackoffParityWithLibraryGo(t *testing.T) {
	libraryGo := func(count int32) time.Duration {
		d := time.Duration(float64(10*time.Second) * math.Pow(1.5, float64(count)))
		return min(d, 10*time.Minute)
	}
	for count := int32(1); count <= 20; count++ {
		assert.Equal(t, libraryGo(count), Policy{}.backoff().Delay(count, 0), "failure %d", count)
	}
	assert.Equal(t, 15*time.Second, Policy{}.backoff().Delay(1, 0.99), "the first retry waits 15 s, with no jitter by default")
}

func TestInstallerBackoffDefaults(t *testing.T) {
	tests := []struct {
		name     string
		b        converge.Backoff
		failures int32
		jitter   float64
		want     time.Duration
	}{
		{name: "no failure", failures: 0, want: 0},
		{name: "default first", failures: 1, want: 15 * time.Second},
		{name: "default second", failures: 2, want: 22500 * time.Millisecond},
		{name: "default capped", failures: 20, want: 10 * time.Minute},
		{name: "counter at its maximum saturates at the cap", failures: math.MaxInt32, want: 10 * time.Minute},
		{name: "the default has no jitter", failures: 1, jitter: 0.9, want: 15 * time.Second},
		{name: "set fields stay, unset ones default", b: converge.Backoff{Initial: dur(time.Second), FactorPercent: 200}, failures: 3, want: 4 * time.Second},
		{name: "a set max bounds the default sequence", b: converge.Backoff{Max: dur(20 * time.Second)}, failures: 3, want: 20 * time.Second},
		{name: "jitter adds its share", b: converge.Backoff{JitterPercent: ptr.To[int32](20)}, failures: 1, jitter: 0.5, want: 16500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Policy{InstallerBackoff: tt.b}.backoff().Delay(tt.failures, tt.jitter))
		})
	}
}

// TestInstallerBackoffJitterCanBeTurnedOff: a CRD's jitterPercent: 0 is no
// jitter, not the default: the retry time recorded for a failure is the
// backoff exactly, whatever jitter the host draws.
func TestInstallerBackoffJitterCanBeTurnedOff(t *testing.T) {
	var p Policy
	require.NoError(t, json.Unmarshal([]byte(`{"installerBackoff":{"jitterPercent":0}}`), &p))
	require.NotNil(t, p.InstallerBackoff.JitterPercent, "jitterPercent: 0 survives the JSON round trip")
	n := NodeStatus{NodeName: "a", CurrentRevision: 1, TargetRevision: 2, InstallerOrderedTime: metaTime(t0)}
	d := NextNodeStatus(n, NodeInput{Latest: 2, Policy: p, Now: t0, Jitter: 0.99,
		Observation: withInstaller(ready(1), InstallerFailed)})
	require.NotNil(t, d.To)
	assert.Equal(t, t0.Add(15*time.Second), d.To.RetryTime.Time)

	p.InstallerBackoff.JitterPercent = ptr.To[int32](100)
	d = NextNodeStatus(n, NodeInput{Latest: 2, Policy: p, Now: t0, Jitter: 0.99,
		Observation: withInstaller(ready(1), InstallerFailed)})
	assert.Equal(t, t0.Add(30*time.Second), d.To.RetryTime.Time, "with jitter set, the drawn jitter counts (15 s + 99 %, rounded up)")
}

func TestPolicyRetryAt(t *testing.T) {
	retry := metav1.NewTime(t0.Add(time.Minute))
	withRetry := failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0)
	withRetry.RetryTime = &retry
	tests := []struct {
		name string
		n    NodeStatus
		want time.Time
	}{
		{name: "no failure", n: node("a", 1, 2), want: time.Time{}},
		{name: "operand failed, target cleared", n: failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, t0), want: t0.Add(15 * time.Second)},
		{name: "not in transition, past the failed revision", n: failed(node("a", 2, 0), 2, 1, ReasonOperandFailed, t0), want: time.Time{}},
		{name: "failure of another revision", n: failed(node("a", 1, 3), 2, 1, ReasonInstallerPodFailed, t0), want: time.Time{}},
		{name: "first failure", n: failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0), want: t0.Add(15 * time.Second)},
		{name: "second failure", n: failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0), want: t0.Add(22500 * time.Millisecond)},
		{name: "a persisted retry time wins", n: withRetry, want: t0.Add(time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Policy{}.retryAt(tt.n))
		})
	}
}

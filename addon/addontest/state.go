package addontest

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

// exploreEpoch is the explorer's start time; exploreVersions the versions
// its specs ask for.
var (
	exploreEpoch    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exploreVersions = [...]string{"v1", "v2"}
)

// exploreState is one state of the exploration.
type exploreState struct {
	// spec is the spec as it is; prev the one before its latest generation
	// (Generation 0: none), which a stale cache serves.
	spec, prev addon.Spec
	status     addon.Status
	// older is the status before the latest write (nil: none was written
	// yet), which a lagging cache serves.
	older *addon.Status
	now   time.Time
	world exploreWorld
	// running is the claim of an action a Machine runs, its outcome still
	// to come; paused when that Machine stalled past the claim's expiry:
	// it resumes later, lands its action unless the Driver fences it out,
	// and records its outcome.
	running *addon.Claim
	paused  bool
	// gate holds the pause and closed windows the state draws (gatePaused,
	// gateClosed).
	gate uint8
	// once marks what happens at most once a path: onceClockBack,
	// onceStretched.
	once uint8
	path *step
}

const (
	onceClockBack uint8 = 1 << iota
	onceStretched
)

// exploreWorld is what the cluster runs, as the explorer keeps it, apart
// from the status.
type exploreWorld struct {
	// cluster is the version the cluster runs ("" none); read is true when
	// its last health read since it changed was healthy, tested when its
	// tests passed (or failed, ignored) since it changed.
	cluster      string
	read, tested bool
	// failed is the version of the latest install or upgrade that failed
	// (failedBy), until an action next succeeds.
	failed   string
	failedBy addon.Action
	// maxGen is the highest spec generation a decision was given.
	maxGen int64
	// fence is the newest fencing token the cluster took a write under:
	// the Driver refuses a write under an older one, as helmconverge does.
	fence int64
	// passed has bit i set once the tests of exploreVersions[i] passed (or
	// failed, ignored by the policy).
	passed uint8
	// blind is true while an inspection that failed keeps the status from
	// knowing what runs, until an inspection or a recorded action tells.
	blind bool
}

// version returns the bit of version v in exploreWorld.passed.
func versionBit(v string) uint8 {
	for i, k := range exploreVersions {
		if k == v {
			return 1 << i
		}
	}
	return 0
}

// step is one step of a path, linked to the one before it.
type step struct {
	prev   *step
	name   string
	choice int
}

func (p *step) then(name string, choice int) *step { return &step{prev: p, name: name, choice: choice} }

func (p *step) names() []string {
	var out []string
	for ; p != nil; p = p.prev {
		out = append(out, p.name)
	}
	slices.Reverse(out)
	return out
}

func (p *step) choices() string {
	var out []string
	for ; p != nil; p = p.prev {
		out = append(out, strconv.Itoa(p.choice))
	}
	slices.Reverse(out)
	return strings.Join(out, ".")
}

// write persists st as s's status; the status it replaces, when st differs
// from it, is the one a lagging cache serves next.
func (s *exploreState) write(st addon.Status) {
	if reflect.DeepEqual(st, s.status) {
		return
	}
	older := s.status
	s.older, s.status = &older, st
}

// key identifies a state for the exploration: what Decide and the rules
// can tell apart, with times relative to the present and counters capped
// where more makes no difference.
func (e *explorer) key(s *exploreState) string {
	k := stateKey{now: s.now}
	e.keyValues(&k, s)
	e.keyTimes(&k, s)
	if s.older != nil {
		older := *s
		older.status, older.older = *s.older, nil
		k.b.WriteString("|older:" + e.key(&older))
	}
	return k.b.String()
}

// stateKey writes a state's key.
type stateKey struct {
	b   strings.Builder
	now time.Time
}

func (k *stateKey) str(f string) {
	k.b.WriteString(f)
	k.b.WriteByte('|')
}

func (k *stateKey) num(n int64) {
	k.b.WriteString(strconv.FormatInt(n, 10))
	k.b.WriteByte(',')
}

func (k *stateKey) flag(f bool) {
	if f {
		k.b.WriteByte('1')
	} else {
		k.b.WriteByte('0')
	}
}

// rel writes t relative to the present, in seconds, and no earlier than
// floor before it.
func (k *stateKey) rel(name string, t *time.Time, floor time.Duration) {
	k.b.WriteString(name)
	if t == nil {
		k.b.WriteString("-;")
		return
	}
	d := max(t.Sub(k.now), floor)
	k.b.WriteString(strconv.FormatInt(int64(d/time.Second), 10))
	k.b.WriteByte(';')
}

// keyValues writes what s holds but times: the status's words and
// counters (capped), the spec, the world and the requests pending.
func (e *explorer) keyValues(k *stateKey, s *exploreState) {
	st := &s.status
	maxRetries := int64(8)
	if r := e.opts.Policy.MaxRetries; r != nil && *r >= 0 {
		maxRetries = int64(*r) + 1
	}
	w := &s.world
	for _, f := range [...]string{string(st.Phase), string(st.PendingAction), string(st.Verifying), string(st.LastFailedAction),
		st.InstalledVersion, st.LastGoodVersion, st.FailedVersion, string(st.Health), s.spec.Version, s.prev.Version,
		w.cluster, w.failed, string(w.failedBy)} {
		k.str(f)
	}
	k.num(min(int64(st.InstallFailures), maxRetries))
	k.num(min(int64(st.UpgradeFailures), maxRetries))
	k.num(min(int64(st.UninstallFailures), maxRetries))
	k.num(min(int64(st.Failures), 8))
	k.num(s.spec.Generation - st.ObservedGeneration)
	k.num(s.spec.Generation - st.SeenGeneration)
	k.num(s.spec.Generation - w.maxGen)
	k.num(s.spec.Generation - s.prev.Generation)
	k.num(int64(s.once))
	k.num(min(int64(st.LostAttempts), int64(e.limits.maxLost)+1))
	k.num(st.Fence - w.fence)
	k.num(int64(w.passed))
	k.str(st.RestoreVersion)
	if st.Mismatch != nil {
		k.str("m:" + st.Mismatch.Version)
	}
	k.num(int64(s.gate))
	for _, f := range [...]bool{s.spec.Deleting, s.spec.ResetToken != "" && s.spec.ResetToken != st.LastResetToken,
		s.spec.ForceToken != "" && s.spec.ForceToken != st.LastForceToken, s.prev.Deleting, w.read, w.tested, w.blind, s.paused} {
		k.flag(f)
	}
	if e.condIs(st, addon.TypeDrifted) {
		k.b.WriteString(addon.TypeDrifted)
	}
}

// keyTimes writes the times of s relative to the present: those in the
// past are all alike, but for those Decide counts from; and the claims, in
// the status and running.
func (e *explorer) keyTimes(k *stateKey, s *exploreState) {
	st := &s.status
	long := -(e.limits.deadline + e.limits.wait)
	k.rel("n", timeOf(st.NextAttemptTime), 0)
	k.rel("r", timeOf(st.ReapplyTime), 0)
	if st.HeldSince != nil && st.Deadline != nil {
		k.b.WriteString("ds" + strconv.FormatInt(int64(max(st.Deadline.Sub(st.HeldSince.Time), 0)/time.Second), 10) + ";")
	} else {
		k.rel("d", timeOf(st.Deadline), 0)
	}
	k.rel("s", timeOf(st.HeldSince), long)
	k.rel("a", timeOf(st.LastAttemptTime), long)
	k.rel("h", timeOf(st.HealthUnknownSince), long)
	for _, c := range [...]*addon.Claim{st.InFlight, s.running} {
		if c == nil {
			k.b.WriteString("c-;")
			continue
		}
		k.b.WriteString("c" + string(c.Action) + "," + c.Owner + "," + c.From + "," + c.To + ";")
		k.num(st.Fence - c.Fence)
		k.rel("t", &c.Started.Time, long)
		k.rel("x", &c.Expires.Time, 0)
	}
	k.flag(sameAttempt(s.running, st.InFlight))
}

// sameAttempt reports whether claims c and o name the same attempt: the
// same action by the same owner under the same fencing token, started at
// the same time, as Claim documents it (its versions and expiry do not
// name it). The explorer
// reads it from that documentation, as it reads the policy's defaults,
// rather than from the engine it checks.
func sameAttempt(c, o *addon.Claim) bool {
	return c != nil && o != nil && c.Action == o.Action && c.Owner == o.Owner && c.Fence == o.Fence && c.Started.Equal(&o.Started)
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func (e *explorer) condIs(st *addon.Status, typ string) bool {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

package rollout

import "github.com/converge-dev/converge"

// The rules a candidate of the pass must pass to start, each a predicate
// that returns the hold that explains it (none for a plain wait) and
// whether it holds the candidate back. holdsBack applies them in order.

// holdsBack applies the rules to c, in order: the first that holds c back
// records its hold, if it has one, and, for a rule that stops the pass,
// that no later node starts; c then waits.
func (p *pass) holdsBack(c *candidate) bool {
	if h, held := p.oldInstaller(c); held {
		return p.held(h, false)
	}
	if h, held := p.notItsTurn(c); held {
		return p.held(h, false)
	}
	if h, held := p.paused(c); held {
		return p.held(h, true)
	}
	if h, held := p.fallenBack(c); held {
		return p.held(h, false)
	}
	if h, held := p.failing(c); held {
		return p.held(h, false)
	}
	if h, held := p.retriesExhausted(c); held {
		return p.held(h, false)
	}
	if h, held := p.inBackoff(c); held {
		return p.held(h, false)
	}
	if h, held := p.installingAtOnce(c); held {
		return p.held(h, true)
	}
	if h, held := p.overBudget(c); held {
		return p.held(h, false)
	}
	if h, held := p.afterStop(c); held {
		return p.held(h, false)
	}
	if h, held := p.unadmitted(c); held {
		return p.held(h, true)
	}
	if h, held := p.gateDenied(c); held {
		return p.held(h, false)
	}
	if h, held := p.soaking(c); held {
		return p.held(h, true)
	}
	return false
}

// held records h, unless it is none, and whether the pass stops; it
// reports that the candidate is held back.
func (p *pass) held(h converge.Hold, stops bool) bool {
	if h.Reason != "" {
		p.x.hold(h)
	}
	p.stopped = p.stopped || stops
	return true
}

// oldInstaller: a node with an installer recorded for deletion gets no new
// installer until the host confirmed it gone, since the new one may have
// its name. It is a hold when the input status recorded it (HoldOldInstaller);
// one this decision records is deleted in this sync.
func (p *pass) oldInstaller(c *candidate) (converge.Hold, bool) {
	switch name := c.n.NodeName; {
	case p.x.deleting[name]:
		return oldInstallerHold(name), true
	case p.x.retiring[name]:
		return converge.Hold{}, true
	}
	return converge.Hold{}, false
}

// notItsTurn: only the start of a pass, or a node already down, retries a
// revision it failed; another node that failed it waits for a pass it
// starts.
func (p *pass) notItsTurn(c *candidate) (converge.Hold, bool) {
	return converge.Hold{}, c.retry && c.i != p.start && !c.down
}

// paused: a paused policy starts no node (HoldPaused); the pass stops.
func (p *pass) paused(*candidate) (converge.Hold, bool) {
	return pausedHold(), p.x.in.Policy.Paused
}

// fallenBack: a node that is up does not start a revision another node
// fell back from, until a newer revision supersedes it: the node in
// fallback retries it first (HoldFallenBack). A node already down may: it
// has nothing to lose.
func (p *pass) fallenBack(c *candidate) (converge.Hold, bool) {
	f, ok := p.fellBack[c.rev]
	if !ok || f == c.i || c.down {
		return converge.Hold{}, false
	}
	return fallenBackHold(p.x.nodes[f].NodeName, c.rev, c.n.NodeName), true
}

// failing: a node that is up does not start a revision another reachable
// node is failing, so that a failure does not spread (HoldRevisionFailing);
// the node failing retries it as the start of a pass. A node already down
// may: it has nothing to lose, and waiting for it could hold the rollout
// forever.
func (p *pass) failing(c *candidate) (converge.Hold, bool) {
	f, ok := p.failingOn[c.rev]
	if !ok || f == c.i || c.retry || c.down {
		return converge.Hold{}, false
	}
	return failingHold(c.rev, p.x.nodes[f].NodeName, c.n.NodeName), true
}

// retriesExhausted: a node that failed its revision more often than
// MaxInstallerRetries allows does not retry it (HoldRetriesExhausted); only
// a newer revision moves it.
func (p *pass) retriesExhausted(c *candidate) (converge.Hold, bool) {
	if !c.retry || !p.x.in.Policy.retriesExhausted(*c.n) {
		return converge.Hold{}, false
	}
	return exhaustedHold(c.n.NodeName, c.rev, c.n.LastFailedCount), true
}

// inBackoff: a node retries a revision it failed only once its backoff has
// passed, at its RetryTime (HoldBackoff); the decision looks again then.
func (p *pass) inBackoff(c *candidate) (converge.Hold, bool) {
	policy, now := p.x.in.Policy, p.x.in.Now
	if !c.retry || !now.Before(policy.retryAt(*c.n)) {
		return converge.Hold{}, false
	}
	p.backoff = policy.retryAt(*c.n).Sub(now)
	return backoffHold(c.n.NodeName, c.rev), true
}

// installingAtOnce: no more than MaxUnavailable nodes install at once,
// whether a start takes its node down or not; the pass stops. It is a
// wait, not a hold: the rollout moves.
func (p *pass) installingAtOnce(*candidate) (converge.Hold, bool) {
	return converge.Hold{}, p.x.in.Policy.overBudget(p.installing, 0)
}

// overBudget: a node that is up starts only while fewer than
// MaxUnavailable other nodes are unavailable (see Policy.MaxUnavailable).
// The unavailable nodes that are not simply installing hold it: each is a
// hold of its own (HoldNodeUnavailable, see holdUnavailable).
func (p *pass) overBudget(c *candidate) (converge.Hold, bool) {
	if c.down || !p.x.in.Policy.overBudget(p.unavailable, c.self) {
		return converge.Hold{}, false
	}
	p.x.holdUnavailable()
	return converge.Hold{}, true
}

// afterStop: once a rule stopped the pass, no later node starts; the rules
// before this one still explain every node.
func (p *pass) afterStop(*candidate) (converge.Hold, bool) {
	return converge.Hold{}, p.stopped
}

// unadmitted: with a gate (Input.Gated), a start the gate has not answered
// for is not made but asked about (Decision.Unadmitted), one start at a
// time; the pass stops.
func (p *pass) unadmitted(c *candidate) (converge.Hold, bool) {
	if !p.x.in.Gated {
		return converge.Hold{}, false
	}
	c.plan()
	if _, asked := p.x.in.Admissions[c.create.Name]; asked {
		return converge.Hold{}, false
	}
	p.x.ask(c.i, c.create)
	return converge.Hold{}, true
}

// gateDenied: a start the gate did not admit waits (HoldGateDenied): the
// gate fails safe.
func (p *pass) gateDenied(c *candidate) (converge.Hold, bool) {
	if !p.x.in.Gated {
		return converge.Hold{}, false
	}
	c.plan()
	answer := p.x.in.Admissions[c.create.Name]
	if answer == "" {
		return converge.Hold{}, false
	}
	return gateHold(c.n.NodeName, answer), true
}

// soaking: a node starts only once every ready operand has been ready for
// MinReadyDuration (HoldSoaking); the pass stops, and the decision looks
// again then.
func (p *pass) soaking(c *candidate) (converge.Hold, bool) {
	now := p.x.in.Now
	if !p.soakUntil.After(now) {
		return converge.Hold{}, false
	}
	p.x.requeue(min(p.soakUntil.Sub(now), p.x.in.Policy.MinReadyDuration.Duration))
	return soakingHold(c.n.NodeName, c.rev), true
}

package graph

import "sync/atomic"

// claims is the claim word of a run's ready queue: how many queued nodes the workers
// claimed (the head) and how many the schedule published (the tail), in one atomic
// word, so that a worker claims a node without the lock and no claim crosses a tail
// lowered under the lock.
type claims struct {
	word atomic.Uint64
}

func packClaims(head, tail int) uint64 { return uint64(head)<<32 | uint64(uint32(tail)) }

func unpackClaims(w uint64) (head, tail int) { return int(w >> 32), int(uint32(w)) }

// load returns the head and the tail.
func (c *claims) load() (head, tail int) { return unpackClaims(c.word.Load()) }

// claim takes the first published position no worker claimed; false when there is none.
func (c *claims) claim() (int, bool) {
	for {
		w := c.word.Load()
		head, tail := unpackClaims(w)
		if head >= tail {
			return 0, false
		}
		if c.word.CompareAndSwap(w, packClaims(head+1, tail)) {
			return head, true
		}
	}
}

// limit lowers the tail to at most head+window and returns the head it kept.
func (c *claims) limit(window int) int {
	for {
		w := c.word.Load()
		head, tail := unpackClaims(w)
		if c.word.CompareAndSwap(w, packClaims(head, min(tail, head+window))) {
			return head
		}
	}
}

// publish sets the tail and returns the head it kept.
func (c *claims) publish(tail int) int {
	for {
		w := c.word.Load()
		head, _ := unpackClaims(w)
		if c.word.CompareAndSwap(w, packClaims(head, tail)) {
			return head
		}
	}
}

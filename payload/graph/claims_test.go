package graph

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClaimsTakeEachPublishedPositionOnce(t *testing.T) {
	var c claims
	_, ok := c.claim()
	assert.False(t, ok, "nothing published: nothing to claim")

	assert.Equal(t, 0, c.publish(3))
	for want := range 3 {
		p, ok := c.claim()
		assert.True(t, ok)
		assert.Equal(t, want, p, "positions are claimed in order")
	}
	_, ok = c.claim()
	assert.False(t, ok, "every published position is claimed")

	assert.Equal(t, 3, c.publish(10))
	assert.Equal(t, 3, c.limit(2), "limit keeps the head")
	head, tail := c.load()
	assert.Equal(t, [2]int{3, 5}, [2]int{head, tail}, "limit lowers the tail to head+window")
	assert.Equal(t, 3, c.limit(4))
	_, tail = c.load()
	assert.Equal(t, 5, tail, "limit never raises the tail")
}

func TestClaimsRacingWorkersClaimEveryPositionExactlyOnce(t *testing.T) {
	const positions, workers = 20000, 8
	var c claims
	claimed := make([]int, positions)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				p, ok := c.claim()
				if !ok {
					head, _ := c.load()
					if head == positions {
						return
					}
					continue
				}
				claimed[p]++ // each position has one owner: -race proves it
			}
		})
	}
	for tail := 0; tail < positions; tail += 100 {
		c.publish(tail + 100)
		c.limit(positions) // a limit above the tail changes nothing
	}
	wg.Wait()
	for p, n := range claimed {
		if n != 1 {
			t.Fatalf("position %d claimed %d times", p, n)
		}
	}
}

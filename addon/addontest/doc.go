// Package addontest checks the addon engine in tests, as httptest sits
// beside http: Explore is an exhaustive model checker that drives
// addon.Decide from a new add-on through every state a table and a policy
// reach within a depth, under stale caches, claims left in flight, crashes
// between two writes, replicas that pause past their claims and clocks
// stepped back, and checks the engine's rules after every decision against
// a world it keeps apart from the status (its Driver fences and inspects,
// as helmconverge's does). Call it from a test on your own table and policy
// (see ExampleExplore); a broken rule is an *ExploreError whose Path
// replays it.
package addontest

//go:build race

package addontest_test

// raceDetector is true in a test binary built with -race.
const raceDetector = true

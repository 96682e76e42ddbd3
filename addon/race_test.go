//go:build race

package addon_test

// raceDetector is true in a test binary built with -race.
const raceDetector = true

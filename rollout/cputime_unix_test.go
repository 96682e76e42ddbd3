//go:build unix

package rollout_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process used so far (user and
// system): benchmarks report it per op beside the wall time, which a
// machine shared with other builds inflates.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build librarygobench

package librarygobench

import (
	"syscall"
	"time"
)

// processCPU is the process's user and system CPU time so far, as
// converge's rollout benchmarks measure it: with GOMAXPROCS=1 its growth
// per op counts one core, which a shared machine inflates less than the
// wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

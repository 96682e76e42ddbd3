//go:build !unix

package rollout_test

import "time"

// processCPU is not measured here: benchmarks report 0 CPU time per op.
func processCPU() time.Duration { return 0 }

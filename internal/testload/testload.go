// Package testload scales the client timeouts of tests to the machine's
// load, so that a test that passes on a quiet machine also passes on a
// loaded one (a two-core machine running the whole suite under the race
// detector) instead of failing on a client's i/o timeout. It reads the
// one-minute load average, where the system reports one.
package testload

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// maxScale bounds the scaling: beyond it a test is stuck, not slow.
const maxScale = 8

// Timeout is d scaled by the machine's load: d on a machine whose load is
// below its core count, up to maxScale times d as the load per core grows.
func Timeout(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Scale())
}

// Scale is 1 plus the one-minute load average per core, at most maxScale
// (1 where the load is not known).
func Scale() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 1
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 1
	}
	return min(1+load/float64(runtime.NumCPU()), maxScale)
}

package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// clockTicksPerSec is USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat (`getconf CLK_TCK`): Linux fixes it at 100 for every
// interface it shows user space, whatever the kernel's own HZ, so it is a
// constant here rather than a sysconf call (x/sys/unix has none on Linux).
const clockTicksPerSec = 100

// processCPU returns the CPU time, user plus system, that process pid has
// used so far, in µs. The kernel derives it from the exact run time of
// all the process's threads, so the only error is its rounding down to a
// tick (10 ms): a window's figure is off by at most one tick.
func processCPU(pid int) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU: %w", err)
	}
	ticks, err := parseProcStat(stat)
	if err != nil {
		return 0, fmt.Errorf("server CPU: /proc/%d/stat: %w", pid, err)
	}
	return float64(ticks) * 1e6 / clockTicksPerSec, nil
}

// parseProcStat returns utime + stime, fields 14 and 15 of a
// /proc/<pid>/stat line, in clock ticks. Field 2 is the command name in
// parentheses, which may itself hold spaces and parentheses, so fields
// are counted from the last ')': the first one after it is field 3.
func parseProcStat(stat []byte) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %.40q", stat)
	}
	fields := bytes.Fields(stat[end+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("%d fields after the command name, want at least %d", len(fields), stime+1)
	}
	var sum int64
	for _, f := range [][]byte{fields[utime], fields[stime]} {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("utime or stime: %w", err)
		}
		sum += n
	}
	return sum, nil
}

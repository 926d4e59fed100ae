package bench

import (
	"os"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		name, stat string
		want       int64
	}{
		{"plain", "4242 (dumbodb) S 1 4242 4242 0 -1 4194560 1790 0 0 0 731 269 0 0 20 0 12 0 7315 1396 2003 18446744073709551615\n", 731 + 269},
		{"command with spaces and parentheses", "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1 1\n", 11},
	} {
		got, err := parseProcStat([]byte(c.stat))
		if err != nil || got != c.want {
			t.Errorf("%s: parseProcStat = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "1 dumbodb S 1", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s 0 0"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) accepted", bad)
		}
	}
}

func TestProcessCPUOfThisProcessGrows(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Reading /proc is itself CPU time: the loop ends after one tick.
	for after := before; after == before; {
		if after, err = processCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if after < before {
			t.Fatalf("CPU went back from %.0f to %.0f µs", before, after)
		}
	}
}

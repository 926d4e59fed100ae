package bench

import (
	"math"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tdumbodb\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 2345678 kB\nVmSize:\t 2345000 kB\n" +
		"VmHWM:\t  412340 kB\nVmRSS:\t  398012 kB\nRssAnon:\t  380000 kB\nThreads:\t12\n"
	rss, peak, err := parseProcStatus([]byte(status))
	if err != nil || rss != 398012 || peak != 412340 {
		t.Errorf("parseProcStatus = %d, %d, %v; want 398012, 412340", rss, peak, err)
	}
	for _, bad := range []string{
		"",
		"Name:\tkthreadd\nState:\tS (sleeping)\n", // a kernel thread has no memory lines
		"VmHWM:\t 1 kB\n",                         // no VmRSS
		"VmHWM:\t 1 kB\nVmRSS:\t x kB\n",
		"VmHWM:\t 1 kB\nVmRSS:\t 2 MB\n",
	} {
		if _, _, err := parseProcStatus([]byte(bad)); err == nil {
			t.Errorf("parseProcStatus(%q) accepted", bad)
		}
	}
}

// sink keeps the test's allocation reachable until it has been measured.
var sink []byte

func TestWatchRSSSeesThisProcessGrow(t *testing.T) {
	rss, peak, err := processRSS(os.Getpid())
	if err != nil || rss <= 0 || peak < rss {
		t.Fatalf("processRSS = %d, %d, %v; want 0 < RSS <= peak", rss, peak, err)
	}
	w := watchRSS(os.Getpid(), 5*time.Millisecond)
	// 64 MiB touched page by page are resident until dropped (some may
	// reuse pages the heap already held: the bound leaves room for that).
	sink = make([]byte, 64<<20)
	for i := range sink {
		if i%4096 == 0 {
			sink[i] = 1
		}
	}
	time.Sleep(20 * time.Millisecond)
	peakMB, endMB, samples, err := w.stop()
	if err != nil {
		t.Fatal(err)
	}
	if peakMB < mb(rss)+40 || endMB > peakMB || len(samples) < 2 {
		t.Errorf("peak %.1f MB, end %.1f MB, %d samples; want the peak at least 40 MB above %.1f MB, the end not above it",
			peakMB, endMB, len(samples), mb(rss))
	}
	sink = nil
	runtime.GC()
}

func TestRSSSlope(t *testing.T) {
	var line []RSSSample
	for i := range 100 {
		at := float64(i) * 2
		// 0.5 MB/hour with a sawtooth of ±3 MB that averages out, after
		// a first minute that fills caches by 100 MB.
		v := 300 + 0.5*at/3600 + 3*math.Sin(at)
		if at < 60 {
			v -= 100 - at
		}
		line = append(line, RSSSample{At: at, MB: v})
	}
	// Over 140 s the sawtooth's residue is about 5 MB/h: a short soak's
	// slope is that noisy, which is why issue 19's figure is over 30 min.
	if s, ok := rssSlope(line, 60); !ok || math.Abs(s-0.5) > 10 {
		t.Errorf("slope after the warm-up = %v MB/h, %v; want 0.5 ± 10", s, ok)
	}
	if s, _ := rssSlope(line, 0); s < 1000 {
		t.Errorf("slope with the warm-up = %.0f MB/h, want the warm-up's climb to show", s)
	}
	exact := []RSSSample{{0, 10}, {1800, 11}, {3600, 12}}
	if s, ok := rssSlope(exact, 0); !ok || math.Abs(s-2) > 1e-9 {
		t.Errorf("slope of 10, 11, 12 MB over an hour = %v, %v; want 2 MB/h", s, ok)
	}
	if _, ok := rssSlope(exact[:2], 0); ok {
		t.Error("a slope from two samples")
	}
	if _, ok := rssSlope([]RSSSample{{5, 1}, {5, 2}, {5, 3}}, 0); ok {
		t.Error("a slope from samples at one instant")
	}
}

func TestSoakWarmup(t *testing.T) {
	for _, c := range []struct{ total, want float64 }{{1800, 360}, {120, 60}, {60, 30}} {
		if got := soakWarmup([]RSSSample{{0, 1}, {c.total, 1}}); got != c.want {
			t.Errorf("warm-up of a %.0f s soak = %v s, want %v", c.total, got, c.want)
		}
	}
}

package bench

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tdumbodb\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t 2345678 kB\nVmSize:\t 2345000 kB\n" +
		"VmHWM:\t  412340 kB\nVmRSS:\t  398012 kB\nRssAnon:\t  380000 kB\nThreads:\t12\n"
	m, err := parseProcStatus([]byte(status))
	if want := (procMemory{rss: 398012 << 10, peak: 412340 << 10, anon: 380000 << 10, threads: 12}); err != nil || m != want {
		t.Errorf("parseProcStatus = %+v, %v; want %+v", m, err, want)
	}
	// RssAnon came in Linux 4.5: without it the rest still reads.
	if m, err := parseProcStatus([]byte("VmHWM:\t 2 kB\nVmRSS:\t 1 kB\n")); err != nil || m != (procMemory{rss: 1024, peak: 2048}) {
		t.Errorf("without RssAnon: %+v, %v", m, err)
	}
	for _, bad := range []string{
		"",
		"Name:\tkthreadd\nState:\tS (sleeping)\n", // a kernel thread has no memory lines
		"VmHWM:\t 1 kB\n",                         // no VmRSS
		"VmHWM:\t 1 kB\nVmRSS:\t x kB\n",
		"VmHWM:\t 1 kB\nVmRSS:\t 2 MB\n",
		"VmHWM:\t 1 kB\nVmRSS:\t 1 kB\nThreads:\tmany\n",
	} {
		if _, err := parseProcStatus([]byte(bad)); err == nil {
			t.Errorf("parseProcStatus(%q) accepted", bad)
		}
	}
}

// sink keeps the test's allocation reachable until it has been measured.
var sink []byte

func TestWatchRSSSeesThisProcessGrow(t *testing.T) {
	m, err := processRSS(os.Getpid())
	if err != nil || m.rss <= 0 || m.peak < m.rss || m.anon <= 0 || m.anon > m.rss {
		t.Fatalf("processRSS = %+v, %v; want 0 < anonymous <= RSS <= peak", m, err)
	}
	rss := m.rss
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
	f, err := w.stop()
	if err != nil {
		t.Fatal(err)
	}
	// The heap is anonymous memory: RssAnon grows as much.
	if f.peak < mb(rss)+40 || f.anonPeak < mb(m.anon)+40 || f.end > f.peak || len(f.samples) < 2 {
		t.Errorf("%+v; want the peak and the anonymous peak at least 40 MB above %.1f and %.1f MB, the end not above the peak",
			f, mb(rss), mb(m.anon))
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
	// slope is that noisy, which is why the soak goal is read over 30 min.
	if s, ok := rssSlope(line, 60); !ok || math.Abs(s-0.5) > 10 {
		t.Errorf("slope after the warm-up = %v MB/h, %v; want 0.5 ± 10", s, ok)
	}
	if s, _ := rssSlope(line, 0); s < 1000 {
		t.Errorf("slope with the warm-up = %.0f MB/h, want the warm-up's climb to show", s)
	}
	exact := []RSSSample{{At: 0, MB: 10}, {At: 1800, MB: 11}, {At: 3600, MB: 12}}
	if s, ok := rssSlope(exact, 0); !ok || math.Abs(s-2) > 1e-9 {
		t.Errorf("slope of 10, 11, 12 MB over an hour = %v, %v; want 2 MB/h", s, ok)
	}
	if _, ok := rssSlope(exact[:2], 0); ok {
		t.Error("a slope from two samples")
	}
	if _, ok := rssSlope([]RSSSample{{At: 5, MB: 1}, {At: 5, MB: 2}, {At: 5, MB: 3}}, 0); ok {
		t.Error("a slope from samples at one instant")
	}
}

func TestSoakWarmup(t *testing.T) {
	for _, c := range []struct{ total, want float64 }{{1800, 360}, {120, 60}, {60, 30}} {
		if got := soakWarmup([]RSSSample{{At: 0, MB: 1}, {At: c.total, MB: 1}}); got != c.want {
			t.Errorf("warm-up of a %.0f s soak = %v s, want %v", c.total, got, c.want)
		}
	}
}

// TestJitteredReadsSeeEveryPhase samples a server part that rises and
// falls with a period that the mean interval divides (edits between
// checkpoints every 5 s, read every 10 s): fixed reads would all see
// one point of its cycle, jittered ones see its mean.
func TestJitteredReadsSeeEveryPhase(t *testing.T) {
	const every = 10 * time.Second
	period := every / 2
	sawtooth := func(at time.Duration) float64 { return float64(at%period) / float64(period) } // 0 to 1, mean 0.5
	rng := rand.New(rand.NewPCG(1, 2))
	var at, sum time.Duration
	var seen float64
	const n = 2000
	for range n {
		wait := jittered(every, rng)
		if wait < every/2 || wait >= every*3/2 {
			t.Fatalf("wait %v outside [%v, %v)", wait, every/2, every*3/2)
		}
		at += wait
		sum += wait
		seen += sawtooth(at)
	}
	if mean := sum / n; mean < every*95/100 || mean > every*105/100 {
		t.Errorf("mean wait %v, want about %v", mean, every)
	}
	if mean := seen / n; mean < 0.45 || mean > 0.55 {
		t.Errorf("the reads' mean of the sawtooth is %.3f, want about 0.5 (its mean over a cycle)", mean)
	}
}

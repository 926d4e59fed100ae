package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"
)

// rssSampleEvery is how often a benchmark's watcher reads the server's
// resident memory. The peak comes from the kernel's own high-water mark
// when it can be reset (resetPeakRSS), so the samples only back it up
// and give the soak its series; reading /proc/<pid>/status costs tens of
// µs, nothing beside the server's work.
const rssSampleEvery = 100 * time.Millisecond

// RSSSample is one reading of the server's resident memory: seconds since
// the benchmark began, and MB (2^20 bytes).
type RSSSample struct {
	At float64 `json:"t_s"`
	MB float64 `json:"mb"`
	// AnonMB is RssAnon then (0: not read, or a kernel before 4.5), and
	// Threads the process's thread count.
	AnonMB  float64 `json:"anon_mb,omitempty"`
	Threads int     `json:"threads,omitempty"`
}

// procMemory is a process's memory from /proc/<pid>/status, in bytes.
type procMemory struct {
	rss  int64 // VmRSS: resident now
	peak int64 // VmHWM: the highest VmRSS since the start or resetPeakRSS
	// anon is RssAnon, the part of rss that is not file pages (the heap,
	// stacks): file pages, the binary's and those of mapped files, are
	// clean and the kernel can drop them under pressure. 0 before Linux 4.5.
	anon int64
	// threads is the process's thread count: each holds a stack the
	// kernel counts in anon (a cgo binary's threads are the C library's,
	// and their stacks outside the Go runtime's figures).
	threads int
}

// processRSS reads process pid's memory.
func processRSS(pid int) (procMemory, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, fmt.Errorf("server RSS: %w", err)
	}
	m, err := parseProcStatus(status)
	if err != nil {
		return procMemory{}, fmt.Errorf("server RSS: /proc/%d/status: %w", pid, err)
	}
	return m, nil
}

// parseProcStatus reads the VmRSS, VmHWM and RssAnon lines of
// /proc/<pid>/status ("VmRSS:\t  123456 kB"). A kernel thread or a zombie
// has no VmRSS: an error, since a server without memory is not one we
// measure.
func parseProcStatus(status []byte) (procMemory, error) {
	found := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if ok && string(key) == "Threads" {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			if err != nil {
				return procMemory{}, fmt.Errorf("%s: %w", key, err)
			}
			found["Threads"] = n
			continue
		}
		if !ok || (string(key) != "VmRSS" && string(key) != "VmHWM" && string(key) != "RssAnon") {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return procMemory{}, fmt.Errorf("%s: want \"N kB\", got %q", key, rest)
		}
		n, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return procMemory{}, fmt.Errorf("%s: %w", key, err)
		}
		found[string(key)] = n << 10
	}
	rss, ok1 := found["VmRSS"]
	peak, ok2 := found["VmHWM"]
	if !ok1 || !ok2 {
		return procMemory{}, fmt.Errorf("no VmRSS or VmHWM line")
	}
	return procMemory{rss: rss, peak: peak, anon: found["RssAnon"], threads: int(found["Threads"])}, nil
}

// resetPeakRSS sets process pid's VmHWM to its current VmRSS (Linux 4.0
// and later, by the process's owner), so that a benchmark's peak is its
// own, not the highest of the benchmarks before it.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// rssWatch samples one server's resident memory while a benchmark runs.
type rssWatch struct {
	pid      int
	start    time.Time
	hwmValid bool // resetPeakRSS worked: VmHWM is the benchmark's peak
	ticks    *ticker

	mu       sync.Mutex
	samples  []RSSSample
	peak     int64 // bytes, the highest of the samples and VmHWM
	anonPeak int64 // bytes, the highest RssAnon sampled (no kernel mark)
	err      error
}

// watchRSS starts sampling pid every interval; stop ends it.
func watchRSS(pid int, every time.Duration) *rssWatch {
	w := &rssWatch{pid: pid, start: time.Now()}
	w.hwmValid = resetPeakRSS(pid) == nil
	w.read()
	w.ticks = tickEvery(every, w.read)
	return w
}

// ticker calls a watch's read about every interval on its own goroutine
// until stopped. Each wait is drawn anew (jittered), because the server
// does things on a clock of its own (a checkpoint every 5 s while
// deletions leave tombstones, syncdelay's, the memory release's): reads
// at a fixed interval that divides such a period all land at the same
// point of its cycle, and a slow drift of that point reads as growth.
// The 30-minute soak's serverStatus read every 10 s saw the edits and the
// live heap step from the trough of a 5-second sawtooth (0.45 MB of
// edits) to its crest (2.2 MB) halfway through, a "rise" of 11 MB/hour
// in a heap that rose and fell by 4 MB every 5 s.
type ticker struct {
	stopc, done chan struct{}
}

func tickEvery(every time.Duration, read func()) *ticker {
	t := &ticker{stopc: make(chan struct{}), done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	go func() {
		defer close(t.done)
		timer := time.NewTimer(jittered(every, rng))
		defer timer.Stop()
		for {
			select {
			case <-t.stopc:
				return
			case <-timer.C:
				read()
				timer.Reset(jittered(every, rng))
			}
		}
	}()
	return t
}

// jittered is a wait drawn evenly from [every/2, 3×every/2): on average
// every, and at no fixed phase of any period.
func jittered(every time.Duration, rng *rand.Rand) time.Duration {
	return every/2 + time.Duration(rng.Int64N(int64(max(every, 1))))
}

// stop ends the calls; none runs once it returns. It may be called once.
func (t *ticker) stop() {
	close(t.stopc)
	<-t.done
}

// read records one sample; the first error is kept and ends the figures.
func (w *rssWatch) read() {
	m, err := processRSS(w.pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	w.samples = append(w.samples, RSSSample{At: time.Since(w.start).Seconds(), MB: mb(m.rss), AnonMB: mb(m.anon), Threads: m.threads})
	w.peak = max(w.peak, m.rss)
	if w.hwmValid {
		w.peak = max(w.peak, m.peak)
	}
	w.anonPeak = max(w.anonPeak, m.anon)
}

// rssFigures are what a watch saw, in MB.
type rssFigures struct {
	peak, end, anonPeak float64
	samples             []RSSSample
}

// stop ends the sampling with a last reading and returns the figures. It
// may be called once.
func (w *rssWatch) stop() (rssFigures, error) {
	w.ticks.stop()
	w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return rssFigures{}, w.err
	}
	return rssFigures{peak: mb(w.peak), end: w.samples[len(w.samples)-1].MB, anonPeak: mb(w.anonPeak), samples: w.samples}, nil
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// rssSlope is the least-squares slope of the samples taken at or after
// from seconds, in MB per hour; false with fewer than three of them or no
// spread in time.
func rssSlope(samples []RSSSample, from float64) (float64, bool) {
	var n, st, sm, stt, stm float64
	for _, s := range samples {
		if s.At < from {
			continue
		}
		n++
		st += s.At
		sm += s.MB
		stt += s.At * s.At
		stm += s.At * s.MB
	}
	den := n*stt - st*st
	if n < 3 || den <= 0 {
		return 0, false
	}
	perSecond := (n*stm - st*sm) / den
	return perSecond * 3600, true
}

package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// A soak's memory by part: beside the RSS series, a soak on DumboDB reads
// serverStatus about every soakStatusEvery (jittered) and keeps what
// each part of the server's memory held (its goMemory and the storage engine's caches and
// edits), so that the report can tell a resident size that rises with
// the live heap (something kept) from one that rises with the runtime's
// free spans or metadata (docs/perf/README.md, "The families in detail").

// soakStatusEvery spaces the serverStatus readings on average: 180 in a
// 30-minute soak, and each costs the server a few tens of µs.
const soakStatusEvery = 10 * time.Second

// memoryParts are the parts read, by their name in the report, and where
// serverStatus has each (bytes).
var memoryParts = []struct {
	name, doc, field string
}{
	{"Go live heap", "goMemory", "liveBytes"},
	{"Go heap objects", "goMemory", "objectsBytes"},
	{"Go heap spans' unused room", "goMemory", "unusedBytes"},
	{"Go heap free, not returned", "goMemory", "freeBytes"},
	{"Go stacks", "goMemory", "stacksBytes"},
	{"Go runtime metadata", "goMemory", "metadataBytes"},
	{"Go profiling records", "goMemory", "profilingBytes"},
	{"node cache", "storageEngine", "nodeCacheBytes"},
	{"uncheckpointed edits", "storageEngine", "editBytes"},
	{"edits only history holds", "storageEngine", "historyBytes"},
}

// MemorySample is one serverStatus reading: seconds since the soak began
// and MB (2^20 bytes) by part name.
type MemorySample struct {
	At    float64            `json:"t_s"`
	Parts map[string]float64 `json:"mb"`
}

// statusWatch reads a DumboDB server's memory parts until stopped.
type statusWatch struct {
	client *mongo.Client
	start  time.Time
	ticks  *ticker

	mu      sync.Mutex
	samples []MemorySample
	err     error
}

func watchStatus(c *mongo.Client, every time.Duration) *statusWatch {
	w := &statusWatch{client: c, start: time.Now()}
	w.read()
	w.ticks = tickEvery(every, w.read)
	return w
}

// read records one sample; the first error is kept and ends the figures.
func (w *statusWatch) read() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := w.client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	var parts map[string]float64
	if err == nil {
		parts, err = memoryPartsOf(raw)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("serverStatus: %w", err)
		}
		return
	}
	w.samples = append(w.samples, MemorySample{At: time.Since(w.start).Seconds(), Parts: parts})
}

// memoryPartsOf reads the memoryParts of a serverStatus reply, in MB.
func memoryPartsOf(status bson.Raw) (map[string]float64, error) {
	parts := make(map[string]float64, len(memoryParts))
	for _, p := range memoryParts {
		n, ok := status.Lookup(p.doc, p.field).AsInt64OK()
		if !ok {
			return nil, fmt.Errorf("no %s.%s", p.doc, p.field)
		}
		parts[p.name] = mb(n)
	}
	return parts, nil
}

func (w *statusWatch) stop() ([]MemorySample, error) {
	w.ticks.stop()
	w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.err
}

// memoryPartsTable is the soak's memory by part: each part's first and
// last reading and its slope after the warm-up, with the anonymous RSS
// (the kernel's count of the heap and stacks) first to compare them with.
func memoryPartsTable(r Result) string {
	if len(r.MemorySamples) == 0 {
		return ""
	}
	from := soakWarmup(r.RSSSamples)
	var b strings.Builder
	fmt.Fprintf(&b, "\n| %s on %s, MB | first | last | slope after %s s, MB/hour |\n|---|--:|--:|--:|\n", r.Benchmark, r.Target, num(from))
	row := func(name string, series []RSSSample) {
		if len(series) == 0 {
			return
		}
		slope := "–"
		if s, ok := rssSlope(series, from); ok {
			slope = num(s)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, num(series[0].MB), num(series[len(series)-1].MB), slope)
	}
	anon := make([]RSSSample, 0, len(r.RSSSamples))
	for _, s := range r.RSSSamples {
		if s.AnonMB > 0 {
			anon = append(anon, RSSSample{At: s.At, MB: s.AnonMB})
		}
	}
	row("anonymous RSS (/proc)", anon)
	for _, p := range memoryParts {
		series := make([]RSSSample, 0, len(r.MemorySamples))
		for _, s := range r.MemorySamples {
			series = append(series, RSSSample{At: s.At, MB: s.Parts[p.name]})
		}
		row(p.name, series)
	}
	return b.String()
}

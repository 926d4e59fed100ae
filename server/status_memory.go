package server

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// serverStatus's memory: mem as mongod reports it (the process's
// resident and virtual size in MiB), and goMemory, what the Go runtime
// holds by class, read from runtime/metrics (which, unlike
// runtime.ReadMemStats, does not stop the world). goMemory is DumboDB's
// own: it tells a resident size that grows because the live heap grows
// (a leak) from one that grows because the collector's pacing, free
// spans not yet returned, or the runtime's metadata moved
// (docs/design/resources.md, "Reading the server's memory").

// goMemoryFields are goMemory's fields and the metrics each sums, in the
// order serverStatus lists them.
var goMemoryFields = []struct {
	field   string
	metrics []string
}{
	{"liveBytes", []string{"/gc/heap/live:bytes"}},
	{"goalBytes", []string{"/gc/heap/goal:bytes"}},
	{"objectsBytes", []string{"/memory/classes/heap/objects:bytes"}},
	{"unusedBytes", []string{"/memory/classes/heap/unused:bytes"}},
	{"freeBytes", []string{"/memory/classes/heap/free:bytes"}},
	{"releasedBytes", []string{"/memory/classes/heap/released:bytes"}},
	{"stacksBytes", []string{"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes"}},
	{"metadataBytes", []string{
		"/memory/classes/metadata/mcache/free:bytes", "/memory/classes/metadata/mcache/inuse:bytes",
		"/memory/classes/metadata/mspan/free:bytes", "/memory/classes/metadata/mspan/inuse:bytes",
		"/memory/classes/metadata/other:bytes", "/memory/classes/other:bytes",
	}},
	{"profilingBytes", []string{"/memory/classes/profiling/buckets:bytes"}},
	{"totalBytes", []string{"/memory/classes/total:bytes"}},
}

// goMemorySamples is one metrics.Sample per metric of goMemoryFields, in
// their order; a fresh copy is read each time (serverStatus may run on
// many connections at once).
func goMemorySamples() []metrics.Sample {
	var s []metrics.Sample
	for _, f := range goMemoryFields {
		for _, name := range f.metrics {
			s = append(s, metrics.Sample{Name: name})
		}
	}
	return s
}

// goMemoryStatus is serverStatus.goMemory: the runtime's classes, then
// what the server's own releases returned (memory_release.go). A metric
// this Go does not have reads as 0 (metrics.KindBad).
func goMemoryStatus(released *memoryReleases) bsoncore.Document {
	samples := goMemorySamples()
	metrics.Read(samples)
	b := bsoncore.NewDocumentBuilder()
	i := 0
	for _, f := range goMemoryFields {
		var sum int64
		for range f.metrics {
			sum += sampleBytes(samples[i])
			i++
		}
		b.AppendInt64(f.field, sum)
	}
	b.AppendInt64("serverReleases", released.count.Load())
	b.AppendInt64("serverReleasedBytes", released.bytes.Load())
	return b.Build()
}

// memStatus is serverStatus.mem: resident and virtual in MiB from
// /proc/self/statm. Where there is none (not Linux), both are what the
// Go runtime has mapped, the nearest it can tell, and supported is false
// as mongod reports a platform without the figures.
func memStatus() bsoncore.Document {
	resident, virtual, ok := procSelfMemory()
	if !ok {
		total := goMemoryTotal()
		resident, virtual = total, total
	}
	return bsoncore.NewDocumentBuilder().
		AppendInt32("bits", 64).
		AppendInt64("resident", resident>>20).
		AppendInt64("virtual", virtual>>20).
		AppendBoolean("supported", ok).Build()
}

// procSelfMemory reads this process's resident and virtual size in bytes
// from /proc/self/statm ("size resident shared text lib data dt", in
// pages).
func procSelfMemory() (resident, virtual int64, ok bool) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	fields := bytes.Fields(statm)
	if len(fields) < 2 {
		return 0, 0, false
	}
	size, err1 := strconv.ParseInt(string(fields[0]), 10, 64)
	rss, err2 := strconv.ParseInt(string(fields[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	page := int64(os.Getpagesize())
	return rss * page, size * page, true
}

func goMemoryTotal() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return sampleBytes(s[0])
}

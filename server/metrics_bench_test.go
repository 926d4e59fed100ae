package server

import (
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkCommandAccounting is what each command pays for the metrics
// and the per-command latency accounting once it has run: the Prometheus
// histogram and counters, serverStatus's metrics.commands and
// opLatencies, top's per-collection times, and the profiler's check (off).
// Divided by the server's CPU per command (dumbobench's FindOne/IntId and
// InsertOne/100B report it), it is the share those cost.
func BenchmarkCommandAccounting(b *testing.B) {
	engine, err := storage.Open(b.TempDir(), storage.Options{}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer engine.Close()
	s := New(Config{}, engine, zerolog.Nop(), nil)
	for _, name := range []string{"find", "insert"} {
		b.Run(name, func(b *testing.B) {
			spec := commandsByName[name]
			cmd := bsoncore.NewDocumentBuilder().AppendString(name, "items").AppendString("$db", "shop").Build()
			req := &request{spec: spec, name: name, db: "shop"}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d := 150 * time.Microsecond
				s.metrics.observe(req.spec, d, false)
				if coll := topCollection(req, cmd); coll != "" {
					s.top.record(req.ns(coll), req.spec, req.name, d)
				}
				s.profiler.record(nil, req, cmd, nil, d, nil)
			}
		})
	}
}

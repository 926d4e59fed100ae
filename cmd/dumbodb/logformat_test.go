package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestMongodLogShape: a line logged through newLogger comes out in
// mongod's shape: t as {$date}, s, c, mongod's id for a message mongod
// logs and a stable one of DumboDB's own, ctx (given, or the
// component's), msg, the rest under attr with client metadata as a
// document and durationMillis a whole number.
func TestMongodLogShape(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(&out)
	log.Info().Str("c", "NETWORK").Str("ctx", "conn7").Str("client", `{"application": {"name": "app"}}`).Msg("client metadata")
	log.Info().Str("c", "COMMAND").Str("ctx", "conn7").Dur("durationMillis", 1500*time.Microsecond).Msg("Slow query")
	log.Debug().Str("c", "STORAGE").Msg("checkpoint")
	log.Warn().Str("c", "STORAGE").Int("n", 3).Msg("something of our own")
	log.Warn().Str("c", "STORAGE").Int("n", 4).Msg("something of our own")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 { // debug is off at the default level
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	var docs []bson.D
	for _, l := range lines {
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(l), false, &d); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		var keys []string
		for _, e := range d {
			keys = append(keys, e.Key)
		}
		if got := strings.Join(keys, ","); !strings.HasPrefix(got, "t,s,c,id,ctx,msg") {
			t.Errorf("keys %s in %s", got, l)
		}
		docs = append(docs, d)
	}
	field := func(d bson.D, path ...string) any {
		var v any = d
		for _, p := range path {
			dd, ok := v.(bson.D)
			if !ok {
				return nil
			}
			v = nil
			for _, e := range dd {
				if e.Key == p {
					v = e.Value
				}
			}
		}
		return v
	}
	for _, c := range []struct {
		got, want any
	}{
		{field(docs[0], "id"), int32(51800)},
		{field(docs[0], "attr", "client", "application", "name"), "app"},
		{field(docs[1], "id"), int32(51803)},
		{field(docs[1], "attr", "durationMillis"), int32(1)},
		{field(docs[2], "ctx"), "checkpointer"},
		{field(docs[2], "s"), "W"},
		{field(docs[2], "id"), field(docs[3], "id")},
	} {
		if c.got != c.want {
			t.Errorf("%v, want %v", c.got, c.want)
		}
	}
	if _, ok := field(docs[0], "t").(bson.DateTime); !ok {
		t.Errorf("t is %T, not a date", field(docs[0], "t"))
	}
	if id := field(docs[2], "id").(int32); id < ownIDBase {
		t.Errorf("own message id %d below %d", id, ownIDBase)
	}
	out.Reset()
	debug := newLogger(&out).Level(zerolog.DebugLevel)
	debug.Debug().Str("c", "STORAGE").Msg("checkpoint")
	if !strings.Contains(out.String(), `"s":"D1"`) {
		t.Errorf("a debug line: %s", out.String())
	}
}

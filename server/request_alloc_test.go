package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestParseArgsDoesNotAllocate: walking a command's fields, generic ones
// included, allocates nothing; only the handlers a command declares may.
func TestParseArgsDoesNotAllocate(t *testing.T) {
	cmd := bsoncore.NewDocumentBuilder().AppendString("find", "c").
		AppendDocument("filter", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendInt64("limit", 1).AppendBoolean("singleBatch", true).
		AppendString("$db", "test").Build()
	r := &request{cmd: cmd, name: "find"}
	var seen int
	count := func(bsoncore.Value) error { seen++; return nil }
	fields := map[string]fieldHandler{"filter": count, "limit": count, "singleBatch": count}
	allocs := testing.AllocsPerRun(100, func() {
		if err := r.parseArgs(fields); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || seen == 0 {
		t.Fatalf("parseArgs: %.1f allocations a call (fields seen %d)", allocs, seen)
	}
}

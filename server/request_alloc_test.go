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

// findCommand is a driver's findOne by _id, as parseFindArgs sees it.
func findCommand() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("find", "c").
		AppendDocument("filter", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendInt64("limit", 1).AppendBoolean("singleBatch", true).
		AppendDocument("lsid", bsoncore.NewDocumentBuilder().AppendInt32("id", 1).Build()).
		AppendString("$db", "test").Build()
}

// BenchmarkParseFindArgs is the argument layer's share of a findOne.
func BenchmarkParseFindArgs(b *testing.B) {
	r := &request{cmd: findCommand(), name: "find"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		a := findArgs{batchSize: batchSizeAbsent}
		if err := r.parseFindArgs(&a); err != nil {
			b.Fatal(err)
		}
	}
}

// updateCommand is a driver's updateOne by _id.
func updateCommand() bsoncore.Document {
	stmt := bsoncore.NewDocumentBuilder().
		AppendDocument("q", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendDocument("u", bsoncore.NewDocumentBuilder().AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendInt32("a", 1).Build()).Build()).
		Build()
	return bsoncore.NewDocumentBuilder().AppendString("update", "c").
		AppendArray("updates", bsoncore.NewArrayBuilder().AppendDocument(stmt).Build()).
		AppendBoolean("ordered", true).AppendString("$db", "test").Build()
}

// BenchmarkParseUpdateStatement is the argument layer's share of an
// updateOne: the command's fields and its one statement's.
func BenchmarkParseUpdateStatement(b *testing.B) {
	r := &request{cmd: updateCommand(), name: "update"}
	stmt := r.cmd.Lookup("updates").Array().Index(0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := r.decodeUpdateStatement(0, stmt); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGenericArgsMatchLookups: the generic fields found as a request is
// made are those a look-up in the command finds, the first of a name.
func TestGenericArgsMatchLookups(t *testing.T) {
	cmd := bsoncore.NewDocumentBuilder().AppendString("find", "c").
		AppendInt64("maxTimeMS", 5).AppendString("comment", "first").AppendString("comment", "second").
		AppendString("$db", "test").Build()
	r := &request{cmd: cmd, name: "find"}
	r.generic.collect(cmd)
	for _, name := range genericFieldNames {
		want, wantErr := cmd.LookupErr(name)
		got, gotErr := r.argErr(name)
		if (wantErr == nil) != (gotErr == nil) || !got.Equal(want) {
			t.Errorf("%s: got %v %v, want %v %v", name, got, gotErr, want, wantErr)
		}
	}
	if v := r.arg("find"); v.StringValue() != "c" {
		t.Errorf("a field that is not generic: %v", v)
	}
}

// TestIDHackCheckDoesNotAllocate: deciding that a findOne by _id skips
// the planner costs no allocation, and so does deciding that one does not.
func TestIDHackCheckDoesNotAllocate(t *testing.T) {
	byID := &findArgs{filter: bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build(), limit: 1}
	two := &findArgs{filter: bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("a", 2).Build()}
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := idHackID(byID, nil); !ok {
			t.Fatal("{_id: 1} not looked up alone")
		}
		if _, ok := idHackID(two, nil); ok {
			t.Fatal("{_id: 1, a: 2} looked up alone")
		}
	})
	if allocs != 0 {
		t.Fatalf("idHackID: %.1f allocations a call", allocs)
	}
}

package server_test

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// csUUID is a collection's UUID from listCollections.
func csUUID(t *testing.T, db *mongo.Database, coll string) bson.Binary {
	t.Helper()
	specs, err := db.ListCollectionSpecifications(ctx, bson.M{"name": coll})
	if err != nil || len(specs) != 1 || specs[0].UUID == nil {
		t.Fatalf("listCollections %s: %v %v", coll, specs, err)
	}
	return *specs[0].UUID
}

// wantUUID asserts an event's collectionUUID.
func wantUUID(t *testing.T, ev bson.M, want bson.Binary) {
	t.Helper()
	got, ok := ev["collectionUUID"].(bson.Binary)
	if !ok || got.Subtype != 4 || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("%s event: collectionUUID %v, want %v: %v", ev["operationType"], ev["collectionUUID"], want, ev)
	}
}

// csIndexes is an event's operationDescription.indexes as names and keys.
func csIndexes(ev bson.M) map[string]any {
	out := map[string]any{}
	arr, _ := get(ev, "operationDescription", "indexes").(bson.A)
	for _, ix := range arr {
		out[get(ix, "name").(string)] = get(ix, "key")
	}
	return out
}

// TestChangeStreamExpandedEvents: with showExpandedEvents a database
// stream reports create (explicit and implicit, with the _id index),
// createIndexes and dropIndexes (with the indexes), modify (a bare collMod
// and one setting changeStreamPreAndPostImages, with stateBeforeChange)
// and rename (to, and dropTarget when the target existed), all with the
// collection's UUID, as the document events are; without it, none of
// those but rename.
func TestChangeStreamExpandedEvents(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	cs := csWatch(t, db, nil, options.ChangeStream().SetShowExpandedEvents(true))
	plain := csWatch(t, db, nil)

	if err := db.CreateCollection(ctx, "items"); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, cs)
	if ev["operationType"] != "create" || csNS(ev) != "shop.items" {
		t.Fatalf("create event: %v", ev)
	}
	uuid := csUUID(t, db, "items")
	wantUUID(t, ev, uuid)
	idIndex := get(ev, "operationDescription", "idIndex")
	if get(idIndex, "name") != "_id_" || get(idIndex, "key", "_id") != int32(1) || get(idIndex, "v") != int32(2) {
		t.Fatalf("create event's idIndex: %v", ev)
	}

	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "a": 1}); err != nil {
		t.Fatal(err)
	}
	ev = nextEvent(t, cs)
	if op, _ := csOp(ev); op != "insert" {
		t.Fatalf("insert event: %v", ev)
	}
	wantUUID(t, ev, uuid)

	// An implicit create comes before the first insert's event.
	if _, err := db.Collection("implicit").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	evs := csEvents(t, cs, 2)
	if evs[0]["operationType"] != "create" || csNS(evs[0]) != "shop.implicit" || evs[1]["operationType"] != "insert" {
		t.Fatalf("implicit create: %v", evs)
	}
	wantUUID(t, evs[0], csUUID(t, db, "implicit"))

	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	ev = nextEvent(t, cs)
	if ix := csIndexes(ev); ev["operationType"] != "createIndexes" || get(ix["a_1"], "a") != int32(1) || len(ix) != 1 {
		t.Fatalf("createIndexes event: %v", ev)
	}
	wantUUID(t, ev, uuid)
	if err := coll.Indexes().DropOne(ctx, "a_1"); err != nil {
		t.Fatal(err)
	}
	ev = nextEvent(t, cs)
	if ix := csIndexes(ev); ev["operationType"] != "dropIndexes" || get(ix["a_1"], "a") != int32(1) || len(ix) != 1 {
		t.Fatalf("dropIndexes event: %v", ev)
	}
	wantUUID(t, ev, uuid)

	mustRun(t, db, bson.D{{Key: "collMod", Value: "items"}})
	ev = nextEvent(t, cs)
	if ev["operationType"] != "modify" || csNS(ev) != "shop.items" {
		t.Fatalf("bare collMod: want a modify event, got %v", ev)
	}
	wantUUID(t, ev, uuid)
	mustRun(t, db, bson.D{{Key: "collMod", Value: "items"}, {Key: "changeStreamPreAndPostImages", Value: bson.M{"enabled": true}}})
	ev = nextEvent(t, cs)
	if ev["operationType"] != "modify" || get(ev, "operationDescription", "changeStreamPreAndPostImages", "enabled") != true {
		t.Fatalf("collMod changeStreamPreAndPostImages: %v", ev)
	}
	wantUUID(t, ev, uuid)
	if before, _ := get(ev, "stateBeforeChange", "collectionOptions", "uuid").(bson.Binary); !bytes.Equal(before.Data, uuid.Data) {
		t.Fatalf("modify's stateBeforeChange: %v", ev)
	}

	// Renames: onto a new name, then over an existing collection.
	admin := db.Client().Database("admin")
	rename := func(from, to string, dropTarget bool) {
		t.Helper()
		mustRun(t, admin, bson.D{{Key: "renameCollection", Value: "shop." + from}, {Key: "to", Value: "shop." + to}, {Key: "dropTarget", Value: dropTarget}})
	}
	rename("items", "goods", false)
	ev = nextEvent(t, cs)
	if ev["operationType"] != "rename" || csNS(ev) != "shop.items" || get(ev, "to", "coll") != "goods" ||
		get(ev, "operationDescription", "to", "coll") != "goods" || get(ev, "operationDescription", "to", "db") != "shop" {
		t.Fatalf("rename event: %v", ev)
	}
	if _, has := get(ev, "operationDescription").(bson.D); !has || get(ev, "operationDescription", "dropTarget") != nil {
		t.Fatalf("rename onto a free name has no dropTarget: %v", ev)
	}
	wantUUID(t, ev, uuid)
	target := csUUID(t, db, "implicit")
	rename("goods", "implicit", true)
	ev = nextEvent(t, cs)
	dropped, _ := get(ev, "operationDescription", "dropTarget").(bson.Binary)
	if ev["operationType"] != "rename" || get(ev, "to", "coll") != "implicit" || !bytes.Equal(dropped.Data, target.Data) {
		t.Fatalf("rename over an existing collection: want dropTarget %v, got %v", target, ev)
	}
	wantUUID(t, ev, uuid)

	// Without showExpandedEvents: the document events and the renames.
	var ops []string
	for _, ev := range csEvents(t, plain, 4) {
		if _, has := ev["collectionUUID"]; has {
			t.Fatalf("collectionUUID without showExpandedEvents: %v", ev)
		}
		if _, has := ev["operationDescription"]; has {
			t.Fatalf("operationDescription without showExpandedEvents: %v", ev)
		}
		ops = append(ops, ev["operationType"].(string))
	}
	if want := []string{"insert", "insert", "rename", "rename"}; !equalStrings(ops, want) {
		t.Fatalf("events without showExpandedEvents: %v, want %v", ops, want)
	}
	csNone(t, plain)
}

// TestChangeStreamDisambiguatedPaths: with showExpandedEvents an update
// of a field whose name looks like an array index, or holds a dot, lists
// the path's parts in disambiguatedPaths; array indexes themselves are
// not ambiguous; without it there is no disambiguatedPaths.
func TestChangeStreamDisambiguatedPaths(t *testing.T) {
	_, coll := startCollection(t, "shop", "items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "m": bson.M{"0": 1, "x": 1}, "arr": bson.A{1, 2}}); err != nil {
		t.Fatal(err)
	}
	cs := csWatch(t, coll, nil, options.ChangeStream().SetShowExpandedEvents(true))
	plain := csWatch(t, coll, nil)
	if _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"m.0": 2, "arr.0": 5, "m.x": 2}}); err != nil {
		t.Fatal(err)
	}
	// A field with a dot in its name, set by a pipeline update.
	if _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, mongo.Pipeline{{{Key: "$replaceWith", Value: bson.M{
		"$setField": bson.M{"field": "a.b", "input": "$$ROOT", "value": 1}}}}}); err != nil {
		t.Fatal(err)
	}
	evs := csEvents(t, cs, 2)
	ud := get(evs[0], "updateDescription")
	if get(ud, "updatedFields", "m.0") != int32(2) || get(ud, "updatedFields", "arr.0") != int32(5) {
		t.Fatalf("updatedFields: %v", ud)
	}
	dp, ok := get(ud, "disambiguatedPaths").(bson.D)
	if !ok {
		t.Fatalf("no disambiguatedPaths with showExpandedEvents: %v", ud)
	}
	if len(dp) != 1 || dp[0].Key != "m.0" {
		t.Fatalf("disambiguatedPaths %v, want only m.0", dp)
	}
	if parts, _ := dp[0].Value.(bson.A); len(parts) != 2 || parts[0] != "m" || parts[1] != "0" {
		t.Fatalf("disambiguatedPaths of m.0: %v, want [m \"0\"]", dp[0].Value)
	}
	ud = get(evs[1], "updateDescription")
	if parts, _ := get(ud, "disambiguatedPaths", "a.b").(bson.A); len(parts) != 1 || parts[0] != "a.b" {
		t.Fatalf("disambiguatedPaths of a field named a.b: %v", ud)
	}
	for _, ev := range csEvents(t, plain, 2) {
		if get(ev, "updateDescription", "disambiguatedPaths") != nil {
			t.Fatalf("disambiguatedPaths without showExpandedEvents: %v", ev)
		}
	}
}

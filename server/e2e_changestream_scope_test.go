package server_test

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// csNS is an event's ns as "db.coll".
func csNS(ev bson.M) string {
	return fmt.Sprintf("%v.%v", get(ev, "ns", "db"), get(ev, "ns", "coll"))
}

// TestChangeStreamDatabaseScope: a database stream sees the writes of all
// its collections, in order, with each event's ns, and not those of
// another database nor the creation of a system collection.
func TestChangeStreamDatabaseScope(t *testing.T) {
	c := startServer(t).client()
	shop, other := c.Database("shop"), c.Database("other")
	cs := csWatch(t, shop, nil, options.ChangeStream().SetShowExpandedEvents(true))
	insert := func(db *mongo.Database, coll string, id int) {
		t.Helper()
		if _, err := db.Collection(coll).InsertOne(ctx, bson.M{"_id": id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := shop.CreateCollection(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	insert(shop, "a", 1)
	insert(other, "a", 2)
	if err := shop.CreateCollection(ctx, "system.js"); err != nil {
		t.Logf("creating system.js: %v", err)
	}
	insert(shop, "b", 3) // implicitly creates b
	insert(shop, "a", 4)
	if _, err := shop.Collection("b").DeleteOne(ctx, bson.M{"_id": 3}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range csEvents(t, cs, 6) {
		op, id := csOp(ev)
		got = append(got, fmt.Sprintf("%s %s %v", op, csNS(ev), id))
	}
	want := []string{"create shop.a <nil>", "insert shop.a 1", "create shop.b <nil>", "insert shop.b 3", "insert shop.a 4", "delete shop.b 3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("database stream events:\n got %q\nwant %q", got, want)
	}
	csNone(t, cs)
}

// TestChangeStreamClientScope: a client stream (allChangesForCluster on
// admin) sees the writes of every database in the order they committed,
// but none of admin, config or local.
func TestChangeStreamClientScope(t *testing.T) {
	c := startServer(t).client()
	cs := csWatch(t, c, nil)
	var want []string
	for i, ns := range []string{"shop.a", "admin.x", "other.b", "config.x", "shop.c", "local.x", "other.b", "shop.a"} {
		db, coll, _ := cutNS(ns)
		_, err := c.Database(db).Collection(coll).InsertOne(ctx, bson.M{"_id": i})
		switch {
		case db == "admin" || db == "config" || db == "local":
			if err != nil {
				t.Logf("insert into %s: %v", ns, err)
			}
		case err != nil:
			t.Fatal(err)
		default:
			want = append(want, fmt.Sprintf("insert %s %d", ns, i))
		}
	}
	var got []string
	for _, ev := range csEvents(t, cs, len(want)) {
		op, id := csOp(ev)
		got = append(got, fmt.Sprintf("%s %s %v", op, csNS(ev), id))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("client stream events:\n got %q\nwant %q", got, want)
	}
	csNone(t, cs)
}

func cutNS(ns string) (string, string, bool) {
	for i := range len(ns) {
		if ns[i] == '.' {
			return ns[:i], ns[i+1:], true
		}
	}
	return ns, "", false
}

// TestChangeStreamBranchScope: a stream on "db@feature" sees only the
// writes of that branch, named with the branch in ns.db; a stream on the
// database (main) sees only main's; a client stream sees main's only.
func TestChangeStreamBranchScope(t *testing.T) {
	c := startServer(t).client()
	main := c.Database("shop")
	if _, err := main.Collection("items").InsertOne(ctx, bson.M{"_id": 0}); err != nil {
		t.Fatal(err)
	}
	vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seed"}})
	vc(t, c, "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	feature := c.Database("shop@feature")

	onFeature := csWatch(t, feature.Collection("items"), nil)
	onFeatureDB := csWatch(t, feature, nil)
	onMain := csWatch(t, main.Collection("items"), nil)
	onMainDB := csWatch(t, main, nil)
	onClient := csWatch(t, c, nil)

	if _, err := feature.Collection("items").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := feature.Collection("items").UpdateOne(ctx, bson.M{"_id": 0}, bson.M{"$set": bson.M{"f": 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Collection("items").InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := feature.Collection("items").DeleteOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}

	for name, cs := range map[string]*mongo.ChangeStream{"collection": onFeature, "database": onFeatureDB} {
		evs := csEvents(t, cs, 3)
		wantOps(t, evs, [2]any{"insert", int32(1)}, [2]any{"update", int32(0)}, [2]any{"delete", int32(1)})
		for _, ev := range evs {
			if ns := csNS(ev); ns != "shop@feature.items" {
				t.Fatalf("%s stream on the branch: ns %s", name, ns)
			}
		}
		csNone(t, cs)
	}
	for name, cs := range map[string]*mongo.ChangeStream{"collection": onMain, "database": onMainDB, "client": onClient} {
		ev := nextEvent(t, cs)
		if op, id := csOp(ev); op != "insert" || id != int32(2) || csNS(ev) != "shop.items" {
			t.Fatalf("%s stream on main: %v", name, ev)
		}
		csNone(t, cs)
	}
}

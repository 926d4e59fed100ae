package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// violationsOf is the violations field of a CannotConvertIndexToUnique
// (359) error as text ("[[1 2] ...]"), or fails.
func violationsOf(t *testing.T, err error) string {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 359 || ce.Name != "CannotConvertIndexToUnique" {
		t.Fatalf("got %v, want CannotConvertIndexToUnique", err)
	}
	var reply struct {
		Violations []struct {
			IDs []any `bson:"ids"`
		} `bson:"violations"`
	}
	if err := bson.Unmarshal(ce.Raw, &reply); err != nil {
		t.Fatal(err)
	}
	out := make([][]any, len(reply.Violations))
	for i, v := range reply.Violations {
		out[i] = v.IDs
	}
	return fmt.Sprint(out)
}

func isDuplicate(err error) bool { return mongo.IsDuplicateKeyError(err) }

// TestCollModPrepareUnique: prepareUnique makes an index refuse new
// duplicate keys on every write path while the duplicates it holds stay;
// unique: true (with dryRun to check only) lists the violating _ids until
// they are gone, then converts the index; forceNonUnique turns it back.
// The options survive a restart.
func TestCollModPrepareUnique(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("pu")
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 2}},
		bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: 3}},
		bson.D{{Key: "_id", Value: 5}, {Key: "a", Value: 3}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "a", Value: 1}}, "a_1")); err != nil {
		t.Fatal(err)
	}
	collMod := func(index bson.D, more ...bson.E) (bson.M, error) {
		return run(t, db, append(bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: index}}, more...))
	}
	byKey := func(opts ...bson.E) bson.D {
		return append(bson.D{{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}}, opts...)
	}
	prepare := bson.E{Key: "prepareUnique", Value: true}
	unique := bson.E{Key: "unique", Value: true}
	dryRun := bson.E{Key: "dryRun", Value: true}

	if _, err := collMod(byKey(unique)); !hasCode(err, 72) {
		t.Errorf("unique before prepareUnique: %v, want InvalidOptions", err)
	}
	res, err := collMod(byKey(prepare))
	if err != nil || res["prepareUnique_old"] != false || res["prepareUnique_new"] != true {
		t.Fatalf("prepareUnique: %v %v", res, err)
	}
	if p := lookupD(listIx(t, c)["a_1"], "prepareUnique"); p != true {
		t.Errorf("listIndexes: prepareUnique = %v", p)
	}
	if res, err = collMod(byKey(prepare)); err != nil || res["prepareUnique_new"] != nil {
		t.Errorf("prepareUnique again is a no-op: %v %v", res, err)
	}

	// New duplicates are refused on every write path; old ones stay.
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 10}, {Key: "a", Value: 2}}); !isDuplicate(err) {
		t.Errorf("insert of a duplicate: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}); !isDuplicate(err) {
		t.Errorf("update to a duplicate: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 99}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}}}},
		options.UpdateOne().SetUpsert(true)); !isDuplicate(err) {
		t.Errorf("upsert of a duplicate: %v", err)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 3}}}}).Err()
	if !isDuplicate(err) {
		t.Errorf("findAndModify to a duplicate: %v", err)
	}
	_, err = c.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 20}, {Key: "a", Value: 20}}),
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 21}, {Key: "a", Value: 20}}),
	})
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[0].Code != 11000 {
		t.Errorf("bulk write with a duplicate: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}); err != nil {
		t.Errorf("an existing duplicate that keeps its key: %v", err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 30}, {Key: "a", Value: 30}}); err != nil {
		t.Errorf("insert of a new key: %v", err)
	}

	// Converting lists the violations; dryRun converts nothing.
	const want = "[[1 2] [4 5]]"
	if _, err := collMod(byKey(unique), dryRun); violationsOf(t, err) != want {
		t.Errorf("dryRun violations: %s, want %s", violationsOf(t, err), want)
	}
	if _, err := collMod(byKey(unique)); violationsOf(t, err) != want {
		t.Errorf("violations: %s, want %s", violationsOf(t, err), want)
	}
	if u := lookupD(listIx(t, c)["a_1"], "unique"); u != nil {
		t.Errorf("a refused conversion made the index unique: %v", u)
	}
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{2, 5}}}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := collMod(byKey(unique), dryRun); err != nil || res["unique_new"] != nil {
		t.Errorf("dryRun without violations: %v %v", res, err)
	}
	if ix := listIx(t, c)["a_1"]; lookupD(ix, "unique") != nil || lookupD(ix, "prepareUnique") != true {
		t.Errorf("dryRun changed the index: %v", ix)
	}
	if res, err = collMod(byKey(unique)); err != nil || res["unique_new"] != true {
		t.Fatalf("conversion: %v %v", res, err)
	}
	if ix := listIx(t, c)["a_1"]; lookupD(ix, "unique") != true || lookupD(ix, "prepareUnique") != nil {
		t.Errorf("after the conversion: %v", ix)
	}
	if res, err = collMod(byKey(unique)); err != nil || res["unique_new"] != nil {
		t.Errorf("unique on a unique index is a no-op: %v %v", res, err)
	}
	if res, err = collMod(byKey(prepare)); err != nil || res["prepareUnique_new"] != nil {
		t.Errorf("prepareUnique on a unique index is a no-op: %v %v", res, err)
	}

	ts.restart()
	db = ts.client().Database("pu")
	c = db.Collection("c")
	if u := lookupD(listIx(t, c)["a_1"], "unique"); u != true {
		t.Errorf("unique after a restart: %v", u)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 40}, {Key: "a", Value: 1}}); !isDuplicate(err) {
		t.Errorf("insert of a duplicate into the converted index: %v", err)
	}
	res, err = run(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: byKey(bson.E{Key: "forceNonUnique", Value: true})}})
	if err != nil || res["forceNonUnique_new"] != true {
		t.Fatalf("forceNonUnique: %v %v", res, err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 40}, {Key: "a", Value: 1}}); err != nil {
		t.Errorf("insert of a duplicate after forceNonUnique: %v", err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "a", Value: 1}}); err != nil || n != 2 {
		t.Errorf("the index after the changes: %d %v", n, err)
	}
}

func hasCode(err error, code int32) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Code == code
}

// TestCollModPrepareUniqueErrors: mongod's errors for bad prepareUnique,
// unique, forceNonUnique and dryRun arguments, and createIndexes'
// prepareUnique.
func TestCollModPrepareUniqueErrors(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("pue")
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "a", Value: 1}}, "a_1"),
		ixSpec(bson.D{{Key: "u", Value: 1}}, "u_1", bson.E{Key: "unique", Value: true})); err != nil {
		t.Fatal(err)
	}
	a1 := func(opts ...bson.E) bson.E {
		return bson.E{Key: "index", Value: append(bson.D{{Key: "name", Value: "a_1"}}, opts...)}
	}
	cm := func(more ...bson.E) bson.D { return append(bson.D{{Key: "collMod", Value: "c"}}, more...) }
	t_, f_ := true, false
	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{cm(a1(bson.E{Key: "unique", Value: t_})), 72},                                           // prepareUnique first
		{cm(a1(bson.E{Key: "unique", Value: f_})), 2},                                            // Cannot make index non-unique
		{cm(a1(bson.E{Key: "forceNonUnique", Value: f_})), 2},                                    // 'forceNonUnique: false'
		{cm(a1(bson.E{Key: "unique", Value: t_}, bson.E{Key: "forceNonUnique", Value: t_})), 72}, // not both
		{cm(a1(bson.E{Key: "prepareUnique", Value: t_}, bson.E{Key: "hidden", Value: t_})), 72},  // prepareUnique alone
		{cm(a1(bson.E{Key: "prepareUnique", Value: t_}), bson.E{Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}), 72},
		{cm(a1(bson.E{Key: "prepareUnique", Value: "yes"})), 14},
		{cm(a1(bson.E{Key: "unique", Value: bson.D{}})), 14},
		{cm(a1()), 72}, // no modification
		{cm(bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "prepareUnique", Value: t_}}}), 72},
		{cm(a1(bson.E{Key: "prepareUnique", Value: t_}), bson.E{Key: "dryRun", Value: "x"}), 14},
		{cm(bson.E{Key: "dryRun", Value: t_}), 72},                                       // needs an index change
		{cm(a1(bson.E{Key: "hidden", Value: t_}), bson.E{Key: "dryRun", Value: t_}), 72}, // needs unique: true
		{cm(bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "u_1"}, {Key: "unique", Value: t_}, {Key: "hidden", Value: t_}}}, bson.E{Key: "dryRun", Value: t_}), 72}, // unique alone
		{bson.D{{Key: "collMod", Value: "missing"}, a1(bson.E{Key: "unique", Value: t_}), bson.E{Key: "dryRun", Value: t_}}, 26},
		{cm(bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "nope"}, {Key: "prepareUnique", Value: t_}}}), 27},
	} {
		_, err := run(t, db, tc.cmd)
		if !hasCode(err, tc.code) {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "b", Value: 1}}, "b_1",
		bson.E{Key: "unique", Value: true}, bson.E{Key: "prepareUnique", Value: true})); !hasCode(err, 67) {
		t.Errorf("createIndexes with unique and prepareUnique: %v, want CannotCreateIndex", err)
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "b", Value: 1}}, "b_1", bson.E{Key: "prepareUnique", Value: true})); err != nil {
		t.Fatalf("createIndexes with prepareUnique: %v", err)
	}
	c := db.Collection("c")
	if p := lookupD(listIx(t, c)["b_1"], "prepareUnique"); p != true {
		t.Errorf("listIndexes after createIndexes: prepareUnique = %v", p)
	}
	_, err := createIx(db, "c", ixSpec(bson.D{{Key: "b", Value: 1}}, "b_1", bson.E{Key: "prepareUnique", Value: false}))
	wantCode(t, err, 85, "IndexOptionsConflict") // the same index with another prepareUnique
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "b", Value: 1}}, bson.D{{Key: "b", Value: 1}}}); !isDuplicate(err) {
		t.Errorf("prepareUnique from createIndexes refuses duplicates: %v", err)
	}
	// numbers are booleans, as mongod's safeBool
	if res, err := run(t, db, cm(bson.E{Key: "index", Value: bson.D{{Key: "name", Value: "b_1"}, {Key: "prepareUnique", Value: 0}}})); err != nil || res["prepareUnique_new"] != false {
		t.Errorf("prepareUnique: 0: %v %v", res, err)
	}
	if p := lookupD(listIx(t, c)["b_1"], "prepareUnique"); p != nil {
		t.Errorf("prepareUnique: false stays listed: %v", p)
	}
}

// TestPrepareUniqueVersionControl: prepareUnique and unique are versioned
// catalog state: a diff lists the change, a hard reset brings the old
// options back (and with them the old rules for writes), a merge takes an
// index change made on one side with the other side's changes of another
// index and of the documents, an index changed differently on both sides
// is MergeConflict, and a document that would give a prepareUnique index
// a new duplicate through a merge becomes a conflict.
func TestPrepareUniqueVersionControl(t *testing.T) {
	ts := startServer(t)
	client := ts.client()
	db := client.Database("puv")
	c := db.Collection("c")
	doc := func(id, a any) bson.D { return bson.D{{Key: "_id", Value: id}, {Key: "a", Value: a}} }
	if _, err := c.InsertMany(ctx, []any{doc(1, 1), doc(2, 1), doc(3, 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "a", Value: 1}}, "a_1"), ixSpec(bson.D{{Key: "b", Value: 1}}, "b_1")); err != nil {
		t.Fatal(err)
	}
	commit := func(db, msg string) {
		vc(t, client, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}})
	}
	collMod := func(db *mongo.Database, name string, opts ...bson.E) bson.M {
		return mustRun(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: append(bson.D{{Key: "name", Value: name}}, opts...)}})
	}
	option := func(c *mongo.Collection, name, opt string) any { return lookupD(listIx(t, c)[name], opt) }
	commit("puv", "base")

	collMod(db, "a_1", bson.E{Key: "prepareUnique", Value: true})
	diff := vc(t, client, "puv", bson.D{{Key: "dumboDiff", Value: 1}})
	if colls, _ := diff["collections"].(bson.A); len(colls) != 1 || get(colls[0], "indexesChanged") != true {
		t.Fatalf("diff after prepareUnique: %v", diff)
	}
	commit("puv", "prepare")
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	collMod(db, "a_1", bson.E{Key: "unique", Value: true})
	vc(t, client, "puv", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	if u, p := option(c, "a_1", "unique"), option(c, "a_1", "prepareUnique"); u != nil || p != true {
		t.Errorf("after a hard reset: unique %v, prepareUnique %v", u, p)
	}
	if _, err := c.InsertOne(ctx, doc(4, 2)); !isDuplicate(err) {
		t.Errorf("prepareUnique after a reset refuses a new duplicate: %v", err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{{Key: "a", Value: 1}}); n != 2 {
		t.Errorf("documents with a: 1 after the reset: %d", n)
	}

	// feature converts a_1; main hides b_1 and writes: both merge in.
	vc(t, client, "puv", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	feature := client.Database("puv@feature")
	if _, err := feature.Collection("c").DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	collMod(feature, "a_1", bson.E{Key: "unique", Value: true})
	if _, err := createIx(feature, "c", ixSpec(bson.D{{Key: "a", Value: -1}}, "a_-1")); err != nil {
		t.Fatal(err)
	}
	commit("puv@feature", "unique")
	collMod(db, "b_1", bson.E{Key: "hidden", Value: true})
	if _, err := c.InsertOne(ctx, doc(10, 10)); err != nil {
		t.Fatal(err)
	}
	commit("puv", "hide b")
	vc(t, client, "puv", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	if u, p, h := option(c, "a_1", "unique"), option(c, "a_1", "prepareUnique"), option(c, "b_1", "hidden"); u != true || p != nil || h != true {
		t.Errorf("after the merge: a_1 unique %v prepareUnique %v, b_1 hidden %v", u, p, h)
	}
	if _, err := c.InsertOne(ctx, doc(11, 1)); !isDuplicate(err) {
		t.Errorf("the merged unique index refuses a duplicate: %v", err)
	}
	if ids := fmt.Sprint(findIDs(t, c, bson.D{}, bson.D{{Key: "_id", Value: 1}}, nil, nil)); ids != "[1 3 10]" {
		t.Errorf("documents after the merge: %s", ids)
	}
	// The index only feature created comes along, with main's document.
	cur, err := c.Find(ctx, bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}}, options.Find().SetHint("a_-1").SetProjection(bson.D{{Key: "_id", Value: 1}}))
	var got []struct {
		ID int32 `bson:"_id"`
	}
	if err == nil {
		err = cur.All(ctx, &got)
	}
	if err != nil || fmt.Sprint(got) != "[{10} {3} {1}]" {
		t.Errorf("through the index merged in: %v %v", got, err)
	}

	// a_1 changed differently on both sides.
	vc(t, client, "puv", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "other"}})
	collMod(client.Database("puv@other"), "a_1", bson.E{Key: "hidden", Value: true})
	commit("puv@other", "hide a")
	collMod(db, "a_1", bson.E{Key: "forceNonUnique", Value: true})
	commit("puv", "a not unique")
	_, err = db.RunCommand(ctx, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "other"}}).Raw()
	wantCode(t, err, 20002, "MergeConflict")
	if u, h := option(c, "a_1", "unique"), option(c, "a_1", "hidden"); u != nil || h != nil {
		t.Errorf("after a refused merge: unique %v, hidden %v", u, h)
	}

	// A merge may not give a prepareUnique index a new duplicate: ours
	// keeps its document and theirs becomes a conflict.
	collMod(db, "a_1", bson.E{Key: "prepareUnique", Value: true})
	commit("puv", "prepare again")
	vc(t, client, "puv", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "dup"}})
	if _, err := client.Database("puv@dup").Collection("c").InsertOne(ctx, doc(20, 50)); err != nil {
		t.Fatal(err)
	}
	commit("puv@dup", "50 there")
	if _, err := c.InsertOne(ctx, doc(21, 50)); err != nil {
		t.Fatal(err)
	}
	commit("puv", "50 here")
	res, err := run(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "dup"}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Name != "MergeConflict" || !bytes.Contains(ce.Raw, []byte("conflicts")) {
		t.Fatalf("a merge bringing a new duplicate: %v %v", res, err)
	}
	if n, _ := ce.Raw.Lookup("conflicts", "c").AsInt64OK(); n != 1 {
		t.Errorf("conflicts of the merge: %s", ce.Raw)
	}
	if ids := fmt.Sprint(findIDs(t, c, bson.D{{Key: "a", Value: 50}}, bson.D{{Key: "_id", Value: 1}}, nil, nil)); ids != "[21]" {
		t.Errorf("documents with a: 50 after the clash: %s (%v)", ids, err)
	}
}

// TestCollModUniqueMultikeyViolations: in a multikey index a document
// shares a key with every document holding one of its elements, and an
// array repeating a value is no duplicate of itself.
func TestCollModUniqueMultikeyViolations(t *testing.T) {
	db := startServer(t).client().Database("pum")
	c := db.Collection("c")
	if _, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1, 2}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{2, 3}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: bson.A{5, 5}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "a", Value: 1}}, "a_1", bson.E{Key: "prepareUnique", Value: true})); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, db, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "unique", Value: true}}}})
	if got := violationsOf(t, err); got != "[[1 2] [2 3]]" {
		t.Errorf("violations: %s", got)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "a", Value: bson.A{6, 1}}}); !isDuplicate(err) {
		t.Errorf("a new array sharing an element: %v", err)
	}
}

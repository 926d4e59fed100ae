package server_test

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ciColl is the case-insensitive English collation of these tests.
var ciColl = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}

// ciExpanded is ciColl as listIndexes shows it, every field filled in.
var ciExpanded = bson.D{
	{Key: "locale", Value: "en"}, {Key: "caseLevel", Value: false}, {Key: "caseFirst", Value: "off"},
	{Key: "strength", Value: int32(2)}, {Key: "numericOrdering", Value: false}, {Key: "alternate", Value: "non-ignorable"},
	{Key: "maxVariable", Value: "punct"}, {Key: "normalization", Value: false}, {Key: "backwards", Value: false},
	{Key: "version", Value: "57.1"},
}

func ixSpec(key bson.D, name string, opts ...bson.E) bson.D {
	return append(bson.D{{Key: "key", Value: key}, {Key: "name", Value: name}}, opts...)
}

func createIx(db *mongo.Database, coll string, specs ...bson.D) (bson.M, error) {
	arr := bson.A{}
	for _, s := range specs {
		arr = append(arr, s)
	}
	var out bson.M
	err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: arr}}).Decode(&out)
	return out, err
}

func listIx(t *testing.T, c *mongo.Collection) map[string]bson.D {
	t.Helper()
	cur, err := c.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bson.D{}
	for cur.Next(ctx) {
		var d bson.D
		if err := bson.Unmarshal(cur.Current, &d); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(get(d, "name"))] = d
	}
	return out
}

// planStages lists a winning plan's stages from the top, IXSCANs as
// "IXSCAN:<index name>".
func planStages(plan any) []string {
	var out []string
	for plan != nil {
		st := fmt.Sprint(get(plan, "stage"))
		if st == "IXSCAN" {
			st += ":" + fmt.Sprint(get(plan, "indexName"))
		}
		out = append(out, st)
		plan = get(plan, "inputStage")
	}
	return out
}

func hasStage(stages []string, s string) bool {
	for _, x := range stages {
		if x == s {
			return true
		}
	}
	return false
}

// explainFind explains a find (collation may be nil) and returns the
// winning plan's stages.
func explainFind(t *testing.T, db *mongo.Database, coll string, filter, sortDoc, collation bson.D, extra ...bson.E) []string {
	t.Helper()
	find := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}}
	if sortDoc != nil {
		find = append(find, bson.E{Key: "sort", Value: sortDoc})
	}
	if collation != nil {
		find = append(find, bson.E{Key: "collation", Value: collation})
	}
	find = append(find, extra...)
	e := mustRun(t, db, bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "executionStats"}})
	return planStages(get(e, "queryPlanner", "winningPlan"))
}

// findIDs runs a find and returns the _ids in result order.
func findIDs(t *testing.T, c *mongo.Collection, filter, sortDoc, collation bson.D, hint any) []any {
	t.Helper()
	o := options.Find()
	if sortDoc != nil {
		o.SetSort(sortDoc)
	}
	if collation != nil {
		o.SetCollation(driverCollation(collation))
	}
	if hint != nil {
		o.SetHint(hint)
	}
	cur, err := c.Find(ctx, filter, o)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	ids := make([]any, len(docs))
	for i, d := range docs {
		ids[i] = get(d, "_id")
	}
	return ids
}

func driverCollation(d bson.D) *options.Collation {
	c := &options.Collation{}
	for _, e := range d {
		switch e.Key {
		case "locale":
			c.Locale = e.Value.(string)
		case "strength":
			c.Strength = e.Value.(int)
		case "numericOrdering":
			c.NumericOrdering = e.Value.(bool)
		}
	}
	return c
}

func sortedIDs(ids []any) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	sort.Strings(out)
	return out
}

var natural = bson.D{{Key: "$natural", Value: 1}}

func TestIndexCollationCommands(t *testing.T) {
	db, c := startCollection(t, "ixcoll", "c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "name", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	key := bson.D{{Key: "name", Value: 1}}
	if _, err := createIx(db, "c", ixSpec(key, "name_ci", bson.E{Key: "collation", Value: ciColl})); err != nil {
		t.Fatal(err)
	}
	specs := listIx(t, c)
	if got := get(specs["name_ci"], "collation"); !reflect.DeepEqual(got, ciExpanded) {
		t.Fatalf("listIndexes collation: %v", got)
	}
	// The same collation spelled differently is the same index.
	res, err := createIx(db, "c", ixSpec(key, "name_ci", bson.E{Key: "collation", Value: bson.D{
		{Key: "strength", Value: int64(2)}, {Key: "locale", Value: "en"}, {Key: "caseLevel", Value: false}, {Key: "version", Value: "57.1"}}}))
	if err != nil || res["note"] != "all indexes already exist" {
		t.Fatalf("repeat: %v %v", res, err)
	}
	// Same name, other collation: a different index under a taken name.
	_, err = createIx(db, "c", ixSpec(key, "name_ci", bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}))
	wantCode(t, err, 86, "IndexKeySpecsConflict")
	// Same key and collation under another name.
	_, err = createIx(db, "c", ixSpec(key, "other", bson.E{Key: "collation", Value: ciColl}))
	wantCode(t, err, 85, "IndexOptionsConflict")
	// Same key with another collation (simple here) may coexist.
	res, err = createIx(db, "c", ixSpec(key, "name_simple", bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}))
	if err != nil || res["numIndexesAfter"] != int32(3) {
		t.Fatalf("second index on the key: %v %v", res, err)
	}
	specs = listIx(t, c)
	if get(specs["name_simple"], "collation") != nil {
		t.Fatalf("simple collation listed: %v", specs["name_simple"])
	}
	if get(specs["_id_"], "collation") != nil {
		t.Fatalf("_id index has a collation: %v", specs["_id_"])
	}
	// A locale's defaults show in the listing.
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "fr", Value: 1}}, "fr_ca", bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr_CA"}, {Key: "numericOrdering", Value: true}}})); err != nil {
		t.Fatal(err)
	}
	fr := get(listIx(t, c)["fr_ca"], "collation")
	if get(fr, "backwards") != true || get(fr, "numericOrdering") != true || get(fr, "locale") != "fr_CA" || get(fr, "strength") != int32(3) {
		t.Fatalf("fr_CA: %v", fr)
	}

	// Dropping by a key pattern two indexes share is ambiguous; by name works.
	_, err = run(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: key}})
	wantCode(t, err, 181, "AmbiguousIndexKeyPattern")
	mustRun(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "name_simple"}})
	mustRun(t, db, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: key}})
	if specs := listIx(t, c); len(specs) != 2 {
		t.Fatalf("after drops: %v", specs)
	}

	// Validation, with mongod's codes.
	bad := []struct {
		collation any
		key       bson.D
		code      int32
		name      string
	}{
		{"en", nil, 14, "TypeMismatch"},
		{bson.D{}, nil, 2, "BadValue"},
		{bson.D{{Key: "strength", Value: 2}}, nil, 40414, ""},
		{bson.D{{Key: "locale", Value: "xx"}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en-US"}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: ""}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: 5}}, nil, 14, "TypeMismatch"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 0}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 6}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: "2"}}, nil, 14, "TypeMismatch"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "sideways"}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "ignore"}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "maxVariable", Value: "all"}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: 1}}, nil, 14, "TypeMismatch"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "backwards", Value: true}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "caseFirst", Value: "upper"}}, nil, 2, "BadValue"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "version", Value: "60.2"}}, nil, 161, "IncompatibleCollationVersion"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "color", Value: "red"}}, nil, 40415, ""},
		{bson.D{{Key: "locale", Value: "simple"}, {Key: "strength", Value: 2}}, nil, 2, "BadValue"},
		{ciColl, bson.D{{Key: "body", Value: "text"}}, 67, "CannotCreateIndex"},
		{ciColl, bson.D{{Key: "_id", Value: 1}}, 2, "BadValue"},
	}
	for _, b := range bad {
		k := b.key
		if k == nil {
			k = bson.D{{Key: "z", Value: 1}}
		}
		_, err := createIx(db, "c", ixSpec(k, "bad", bson.E{Key: "collation", Value: b.collation}))
		wantCode(t, err, b.code, b.name)
	}
	// The query collations are checked the same way.
	err = c.FindOne(ctx, bson.D{}, options.FindOne().SetCollation(&options.Collation{Locale: "en", CaseFirst: "sideways"})).Err()
	wantCode(t, err, 2, "BadValue")
}

func TestIndexCollationUnique(t *testing.T) {
	db, c := startCollection(t, "ixcolluniq", "users")
	if _, err := createIx(db, "users", ixSpec(bson.D{{Key: "email", Value: 1}}, "email_ci", bson.E{Key: "unique", Value: true}, bson.E{Key: "collation", Value: ciColl})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "ann@example.com"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "ANN@Example.COM"}})
	var we mongo.WriteException
	if !mongo.IsDuplicateKeyError(err) || !errors.As(err, &we) || len(we.WriteErrors) != 1 {
		t.Fatalf("case variant inserted: %v", err)
	}
	var kvDoc bson.D
	if raw, ok := we.WriteErrors[0].Raw.Lookup("keyValue").DocumentOK(); ok {
		_ = bson.Unmarshal(raw, &kvDoc)
	}
	// keyValue shows the refused document's value (mongod shows the
	// collation key in hex, which only ICU could reproduce).
	if kv := get(kvDoc, "email"); kv != "ANN@Example.COM" || !strings.Contains(we.WriteErrors[0].Message, "E11000") {
		t.Fatalf("duplicate key error: %v (keyValue %v)", we, kv)
	}
	// Accents differ at strength 2; non-strings index as without a collation.
	for i, v := range []any{"ann@exämple.com", 42, int64(42) + 1, bson.D{{Key: "x", Value: "Y"}}} {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 10 + i}, {Key: "email", Value: v}}); err != nil {
			t.Fatalf("insert %v: %v", v, err)
		}
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 20}, {Key: "email", Value: 42.0}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("42.0 beside 42: %v", err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 21}, {Key: "email", Value: bson.D{{Key: "x", Value: "y"}}}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("nested case variant: %v", err)
	}
	// Updates: a case variant of another document's value is refused; of
	// the document's own value it is fine.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 10}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "Ann@Example.com"}}}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("update to a variant: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "Ann@Example.com"}}}}); err != nil {
		t.Fatalf("update to its own variant: %v", err)
	}
	// After a delete (with the collation) the value is free again.
	res, err := c.DeleteMany(ctx, bson.D{{Key: "email", Value: "ANN@EXAMPLE.COM"}}, options.DeleteMany().SetCollation(driverCollation(ciColl)))
	if err != nil || res.DeletedCount != 1 {
		t.Fatalf("delete with collation: %v %v", res, err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "ANN@Example.COM"}}); err != nil {
		t.Fatalf("insert after delete: %v", err)
	}

	// Building a unique collated index over case variants fails as mongod's does.
	d := db.Collection("dups")
	if _, err := d.InsertMany(ctx, []any{bson.D{{Key: "n", Value: "Bob"}}, bson.D{{Key: "n", Value: "bob"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = createIx(db, "dups", ixSpec(bson.D{{Key: "n", Value: 1}}, "n_ci", bson.E{Key: "unique", Value: true}, bson.E{Key: "collation", Value: ciColl}))
	wantCode(t, err, 11000, "DuplicateKey")
	if _, err := createIx(db, "dups", ixSpec(bson.D{{Key: "n", Value: 1}}, "n_1", bson.E{Key: "unique", Value: true})); err != nil {
		t.Fatalf("simple unique index: %v", err)
	}
}

// ciDocs are names in several cases and accents, with numbers, nested
// documents and arrays among them.
func ciDocs() []any {
	names := []any{"alice", "Alice", "ALICE", "álice", "bob", "Bob", "carol", "Zoë", "zoe", "ZOE", "dave", "Émile", "emile",
		"", "a", "B", 5, 7.5, int64(12), nil, bson.D{{Key: "first", Value: "Alice"}}, bson.D{{Key: "first", Value: "alice"}},
		"Carol", "DAVE", true}
	colors := []string{"Red", "RED", "red", "blue", "Blue"}
	var docs []any
	for i, n := range names {
		d := bson.D{{Key: "_id", Value: i}, {Key: "name", Value: n}, {Key: "city", Value: []string{"Paris", "PARIS", "paris", "Oslo"}[i%4]}, {Key: "num", Value: i},
			{Key: "tags", Value: bson.A{colors[i%5], colors[(i+1)%5], "x"}}}
		docs = append(docs, d)
	}
	return append(docs, bson.D{{Key: "_id", Value: 100}, {Key: "city", Value: "oslo"}, {Key: "num", Value: 100}})
}

func TestIndexCollationPlanner(t *testing.T) {
	db, c := startCollection(t, "ixcollplan", "c")
	if _, err := c.InsertMany(ctx, ciDocs()); err != nil {
		t.Fatal(err)
	}
	if _, err := createIx(db, "c",
		ixSpec(bson.D{{Key: "name", Value: 1}}, "name_ci", bson.E{Key: "collation", Value: ciColl}),
		ixSpec(bson.D{{Key: "city", Value: 1}}, "city_1"),
		ixSpec(bson.D{{Key: "num", Value: 1}}, "num_1"),
		ixSpec(bson.D{{Key: "tags", Value: 1}}, "tags_ci", bson.E{Key: "collation", Value: ciColl}),
	); err != nil {
		t.Fatal(err)
	}
	fr := bson.D{{Key: "locale", Value: "fr"}}
	filters := []bson.D{
		{{Key: "name", Value: "alice"}},
		{{Key: "name", Value: "ZOE"}},
		{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{"BOB", "carol", "EMILE"}}}}},
		{{Key: "name", Value: bson.D{{Key: "$gt", Value: "b"}, {Key: "$lte", Value: "DAVE"}}}},
		{{Key: "name", Value: bson.D{{Key: "$gte", Value: "Z"}}}},
		{{Key: "name", Value: bson.D{{Key: "$lt", Value: "B"}}}},
		{{Key: "name", Value: bson.D{{Key: "first", Value: "ALICE"}}}},
		{{Key: "name", Value: "x"}},
		{{Key: "name", Value: "alice"}, {Key: "num", Value: bson.D{{Key: "$gt", Value: 0}}}},
	}
	for _, f := range filters {
		want := sortedIDs(findIDs(t, c, f, nil, ciColl, natural))
		if len(want) == 0 && f[0].Value != "x" {
			t.Fatalf("%v: the collection scan finds nothing", f)
		}
		// The query's collation is the index's: IXSCAN, same documents.
		st := explainFind(t, db, "c", f, nil, ciColl)
		if !hasStage(st, "IXSCAN:name_ci") || hasStage(st, "PROJECTION_COVERED") {
			t.Fatalf("%v with the collation: plan %v", f, st)
		}
		if got := sortedIDs(findIDs(t, c, f, nil, ciColl, nil)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v with the collation: %v, collection scan %v", f, got, want)
		}
		// Without a collation, or with another, the index bounds no string.
		for _, qc := range []bson.D{nil, fr} {
			st := explainFind(t, db, "c", f, nil, qc)
			if hasStage(st, "IXSCAN:name_ci") {
				t.Fatalf("%v with collation %v: plan %v", f, qc, st)
			}
			want := sortedIDs(findIDs(t, c, f, nil, qc, natural))
			if got := sortedIDs(findIDs(t, c, f, nil, qc, nil)); !reflect.DeepEqual(got, want) {
				t.Fatalf("%v with collation %v: %v, collection scan %v", f, qc, got, want)
			}
			// A hint forces the index; the filter keeps the results right.
			if got := sortedIDs(findIDs(t, c, f, nil, qc, "name_ci")); !reflect.DeepEqual(got, want) {
				t.Fatalf("%v hinted with collation %v: %v, collection scan %v", f, qc, got, want)
			}
		}
	}
	// A multikey collated index: array elements are keyed by collation too.
	for _, f := range []bson.D{{{Key: "tags", Value: "RED"}}, {{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{"BLUE", "y"}}}}}} {
		if st := explainFind(t, db, "c", f, nil, ciColl); !hasStage(st, "IXSCAN:tags_ci") {
			t.Fatalf("%v: plan %v", f, st)
		}
		want := sortedIDs(findIDs(t, c, f, nil, ciColl, natural))
		if got := sortedIDs(findIDs(t, c, f, nil, ciColl, nil)); !reflect.DeepEqual(got, want) || len(got) == 0 {
			t.Fatalf("%v: %v, collection scan %v", f, got, want)
		}
	}
	// Predicates on numbers use the collated index under any collation.
	for _, qc := range []bson.D{nil, ciColl, fr} {
		f := bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: 5}}}}
		if st := explainFind(t, db, "c", f, nil, qc); !hasStage(st, "IXSCAN:name_ci") {
			t.Fatalf("number bound with collation %v: plan %v", qc, st)
		}
		if got := sortedIDs(findIDs(t, c, f, nil, qc, nil)); !reflect.DeepEqual(got, []string{"16", "17", "18"}) {
			t.Fatalf("number bound with collation %v: %v", qc, got)
		}
	}
	// A query collation keeps a simple index from bounding strings, not numbers.
	f := bson.D{{Key: "city", Value: "paris"}}
	if st := explainFind(t, db, "c", f, nil, ciColl); hasStage(st, "IXSCAN:city_1") {
		t.Fatalf("simple index under a collation: %v", st)
	}
	if got := findIDs(t, c, f, nil, ciColl, nil); len(got) != 19 {
		t.Fatalf("paris with the collation: %d documents", len(got))
	}
	if got := findIDs(t, c, f, nil, nil, nil); len(got) != 6 {
		t.Fatalf("paris without collation: %d documents", len(got))
	}
	if st := explainFind(t, db, "c", bson.D{{Key: "num", Value: bson.D{{Key: "$lt", Value: 3}}}}, nil, ciColl); !hasStage(st, "IXSCAN:num_1") {
		t.Fatalf("numbers under a collation: %v", st)
	}
	// _id strings under a collation: no point look-up of one spelling.
	ids := db.Collection("ids")
	if _, err := ids.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "k1"}}, bson.D{{Key: "_id", Value: "K1"}}}); err != nil {
		t.Fatal(err)
	}
	if got := findIDs(t, ids, bson.D{{Key: "_id", Value: "k1"}}, nil, ciColl, nil); len(got) != 2 {
		t.Fatalf("_id under a collation: %v", got)
	}

	// Covered: never from a collated index.
	e := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "name", Value: "bob"}}},
		{Key: "projection", Value: bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 0}}}, {Key: "collation", Value: ciColl}}}})
	if st := planStages(get(e, "queryPlanner", "winningPlan")); hasStage(st, "PROJECTION_COVERED") || !hasStage(st, "FETCH") || !hasStage(st, "IXSCAN:name_ci") {
		t.Fatalf("covered: %v", st)
	}
	if got := get(e, "queryPlanner", "winningPlan", "inputStage", "inputStage", "collation"); !reflect.DeepEqual(got, ciExpanded) {
		t.Fatalf("IXSCAN collation: %v", get(e, "queryPlanner", "winningPlan"))
	}
	cur, err := c.Find(ctx, bson.D{{Key: "name", Value: "bob"}}, options.Find().SetCollation(driverCollation(ciColl)).
		SetProjection(bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 0}}).SetSort(bson.D{{Key: "name", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var names []bson.D
	if err := cur.All(ctx, &names); err != nil || len(names) != 2 {
		t.Fatalf("projected: %v %v", names, err)
	}

	// Sorting: from the index with the same collation, in collation order.
	// (DumboDB's planner takes an index for a sort only when it also
	// bounds a predicate, collation or not.)
	sortDoc := bson.D{{Key: "name", Value: 1}}
	strs := bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: ""}}}}
	st := explainFind(t, db, "c", strs, sortDoc, ciColl)
	if hasStage(st, "SORT") || !hasStage(st, "IXSCAN:name_ci") {
		t.Fatalf("sort with the collation: %v", st)
	}
	want := ciSortClasses(t, c, findIDs(t, c, strs, sortDoc, ciColl, natural))
	if got := ciSortClasses(t, c, findIDs(t, c, strs, sortDoc, ciColl, nil)); !reflect.DeepEqual(got, want) || len(got) != 18 {
		t.Fatalf("sort from the index:\n%v\nin memory:\n%v", got, want)
	}
	desc := bson.D{{Key: "name", Value: -1}}
	want = ciSortClasses(t, c, findIDs(t, c, bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: "b"}}}}, desc, ciColl, natural))
	if got := ciSortClasses(t, c, findIDs(t, c, bson.D{{Key: "name", Value: bson.D{{Key: "$gte", Value: "b"}}}}, desc, ciColl, nil)); !reflect.DeepEqual(got, want) {
		t.Fatalf("descending sort from the index:\n%v\nin memory:\n%v", got, want)
	}
	for _, qc := range []bson.D{nil, fr} {
		if st := explainFind(t, db, "c", strs, sortDoc, qc); !hasStage(st, "SORT") || hasStage(st, "IXSCAN:name_ci") {
			t.Fatalf("sort with collation %v: %v", qc, st)
		}
	}
	// A simple index gives no sort under a query collation either.
	cities := bson.D{{Key: "city", Value: bson.D{{Key: "$gte", Value: ""}}}}
	if st := explainFind(t, db, "c", cities, bson.D{{Key: "city", Value: 1}}, nil); hasStage(st, "SORT") || !hasStage(st, "IXSCAN:city_1") {
		t.Fatalf("simple index sort: %v", st)
	}
	if st := explainFind(t, db, "c", cities, bson.D{{Key: "city", Value: 1}}, ciColl); !hasStage(st, "SORT") || hasStage(st, "IXSCAN:city_1") {
		t.Fatalf("simple index sort under a collation: %v", st)
	}
	got := findIDs(t, c, bson.D{}, bson.D{{Key: "city", Value: 1}, {Key: "_id", Value: 1}}, ciColl, nil)
	if fmt.Sprint(got[:7]) != "[3 7 11 15 19 23 100]" {
		t.Fatalf("city sort under the collation: %v", got)
	}

	// count, aggregate, update and delete plan the same way.
	for _, qc := range []bson.D{nil, ciColl} {
		f := bson.D{{Key: "name", Value: "ALICE"}}
		want := len(findIDs(t, c, f, nil, qc, natural))
		o := options.Count()
		if qc != nil {
			o.SetCollation(driverCollation(qc))
		}
		var res bson.M
		cmd := bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: f}}
		if qc != nil {
			cmd = append(cmd, bson.E{Key: "collation", Value: qc})
		}
		if err := db.RunCommand(ctx, cmd).Decode(&res); err != nil || fmt.Sprint(res["n"]) != fmt.Sprint(want) {
			t.Fatalf("count with %v: %v %v, want %d", qc, res, err, want)
		}
		e := mustRun(t, db, bson.D{{Key: "explain", Value: cmd}})
		stages := planStages(get(e, "queryPlanner", "winningPlan"))
		if (qc != nil) != (fmt.Sprint(stages) == "[COUNT COUNT_SCAN]") {
			t.Fatalf("count plan with %v: %v", qc, stages)
		}
		pipeline := bson.A{bson.D{{Key: "$match", Value: f}}, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}}
		agg := bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: pipeline}, {Key: "explain", Value: true}}
		if qc != nil {
			agg = append(agg, bson.E{Key: "collation", Value: qc})
		}
		plan := planStages(get(mustRun(t, db, agg)["stages"].(bson.A)[0], "$cursor", "queryPlanner", "winningPlan"))
		if hasStage(plan, "IXSCAN:name_ci") != (qc != nil) {
			t.Fatalf("aggregate plan with %v: %v", qc, plan)
		}
		var extra []bson.E
		if qc != nil {
			extra = append(extra, bson.E{Key: "collation", Value: qc})
		}
		if n := len(aggRaw(t, db, "c", pipeline, extra...)); n != want {
			t.Fatalf("aggregate with %v: %d, want %d", qc, n, want)
		}
	}
	upd, err := c.UpdateMany(ctx, bson.D{{Key: "name", Value: "ZOË"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "Zoey"}}}},
		options.UpdateMany().SetCollation(driverCollation(ciColl)))
	if err != nil || upd.ModifiedCount != 1 {
		t.Fatalf("update with the collation: %v %v", upd, err)
	}
	for _, probe := range []struct {
		name string
		n    int
	}{{"zoë", 0}, {"ZOEY", 1}, {"zoe", 2}} {
		f := bson.D{{Key: "name", Value: probe.name}}
		if got := findIDs(t, c, f, nil, ciColl, nil); len(got) != probe.n || len(findIDs(t, c, f, nil, ciColl, natural)) != probe.n {
			t.Fatalf("after update, %s: %v", probe.name, got)
		}
	}
	del, err := c.DeleteMany(ctx, bson.D{{Key: "name", Value: "ALICE"}}, options.DeleteMany().SetCollation(driverCollation(ciColl)))
	if err != nil || del.DeletedCount != 3 {
		t.Fatalf("delete with the collation: %v %v", del, err)
	}
	if got := findIDs(t, c, bson.D{{Key: "name", Value: bson.D{{Key: "$lte", Value: "alice"}}}}, nil, ciColl, nil); fmt.Sprint(sortedIDs(got)) != "[13 14]" {
		t.Fatalf("after delete: %v", got)
	}
}

// ciSortClasses maps sorted _ids to their names, lower-cased so that
// strings the strength-2 collation finds equal (whose order among
// themselves is not defined) compare equal.
func ciSortClasses(t *testing.T, c *mongo.Collection, ids []any) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		var d bson.D
		if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
			t.Fatal(err)
		}
		out[i] = strings.ToLower(fmt.Sprint(get(d, "name")))
	}
	return out
}

// TestIndexCollationRandomized compares finds through a collated index
// with collection scans of the same collation over random strings and
// random updates.
func TestIndexCollationRandomized(t *testing.T) {
	db, c := startCollection(t, "ixcollrand", "c")
	r := rand.New(rand.NewSource(5))
	letters := []string{"a", "A", "á", "b", "B", "e", "é", "É", "z", "Z", "1", "10", "2", " "}
	word := func() any {
		if r.Intn(8) == 0 {
			return r.Intn(20)
		}
		var sb strings.Builder
		for n := r.Intn(4); n >= 0; n-- {
			sb.WriteString(letters[r.Intn(len(letters))])
		}
		return sb.String()
	}
	var docs []any
	for i := 0; i < 300; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: word()}, {Key: "n", Value: r.Intn(10)}})
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	coll := bson.D{{Key: "locale", Value: "de"}, {Key: "strength", Value: 1}, {Key: "numericOrdering", Value: true}}
	if _, err := createIx(db, "c", ixSpec(bson.D{{Key: "s", Value: 1}, {Key: "n", Value: -1}}, "s_n", bson.E{Key: "collation", Value: coll})); err != nil {
		t.Fatal(err)
	}
	ops := []string{"$eq", "$gt", "$gte", "$lt", "$lte", "$in"}
	for round := 0; round < 120; round++ {
		op := ops[r.Intn(len(ops))]
		var cond any = bson.D{{Key: op, Value: word()}}
		if op == "$in" {
			cond = bson.D{{Key: op, Value: bson.A{word(), word()}}}
		}
		f := bson.D{{Key: "s", Value: cond}}
		if r.Intn(3) == 0 {
			f = append(f, bson.E{Key: "n", Value: bson.D{{Key: "$gte", Value: r.Intn(10)}}})
		}
		var sortDoc bson.D
		if r.Intn(2) == 0 {
			sortDoc = bson.D{{Key: "s", Value: 1}, {Key: "n", Value: -1}}
		}
		want := findIDs(t, c, f, sortDoc, coll, natural)
		got := findIDs(t, c, f, sortDoc, coll, nil)
		if sortDoc == nil {
			got, want = anyStrings(sortedIDs(got)), anyStrings(sortedIDs(want))
		}
		// Sorted: entries of equal keys are in _id order, as the stable
		// in-memory sort of the collection scan leaves them.
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d %v sort %v: %v, collection scan %v", round, f, sortDoc, got, want)
		}
		if round%10 == 0 {
			st := explainFind(t, db, "c", f, sortDoc, coll)
			if !hasStage(st, "IXSCAN:s_n") || (sortDoc != nil && hasStage(st, "SORT")) {
				t.Fatalf("round %d %v: plan %v", round, f, st)
			}
		}
		// Random writes keep the index in step.
		id := r.Intn(300)
		switch r.Intn(3) {
		case 0:
			if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "s", Value: word()}}}}); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "s", Value: word()}, {Key: "n", Value: r.Intn(10)}},
				options.Replace().SetUpsert(true)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func anyStrings(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// TestDistinctCollation: distinct matches its query and tells values
// apart under its collation, as find and $group do; each class of equal
// values is answered once, by its first member.
func TestDistinctCollation(t *testing.T) {
	db, c := startCollection(t, "dc", "people")
	if _, err := c.InsertMany(ctx, ciDocs()); err != nil {
		t.Fatal(err)
	}
	fold := strings.NewReplacer("á", "a", "ë", "e", "é", "e").Replace
	classes := map[string]func(string) string{
		"simple":     func(s string) string { return s },
		"strength 2": strings.ToLower,
		"strength 1": func(s string) string { return fold(strings.ToLower(s)) },
	}
	collations := map[string]bson.D{
		"simple":     nil,
		"strength 2": ciColl,
		"strength 1": {{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}},
	}
	for name, coll := range collations {
		for _, field := range []string{"name", "tags", "city"} {
			want := distinctModel(t, c, field, classes[name])
			got := distinctValues(t, db, field, bson.D{}, coll)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, distinct %s:\n got %v\nwant %v", name, field, got, want)
			}
		}
	}
	if got := distinctValues(t, db, "num", bson.D{{Key: "name", Value: "ALICE"}}, ciColl); !reflect.DeepEqual(got, []string{"0", "1", "2"}) {
		t.Errorf("the query must match under the collation: %v", got)
	}
	bad := bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 9}}
	_, findErr := c.Find(ctx, bson.D{}, options.Find().SetCollation(driverCollation(bad)))
	distinctErr := db.RunCommand(ctx, bson.D{{Key: "distinct", Value: "people"}, {Key: "key", Value: "name"}, {Key: "collation", Value: bad}}).Err()
	var fe, de mongo.ServerError
	if !errors.As(findErr, &fe) || !errors.As(distinctErr, &de) || fe.(mongo.CommandError).Code != de.(mongo.CommandError).Code {
		t.Errorf("a bad collation: find %v, distinct %v", findErr, distinctErr)
	}
}

// distinctValues runs distinct and renders each value as a string.
func distinctValues(t *testing.T, db *mongo.Database, key string, filter, collation bson.D) []string {
	t.Helper()
	cmd := bson.D{{Key: "distinct", Value: "people"}, {Key: "key", Value: key}, {Key: "query", Value: filter}}
	if collation != nil {
		cmd = append(cmd, bson.E{Key: "collation", Value: collation})
	}
	var res struct{ Values []any }
	if err := db.RunCommand(ctx, cmd).Decode(&res); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(res.Values))
	for i, v := range res.Values {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// distinctModel computes distinct over the documents in _id order: the
// first value of each class, where class maps a string (also inside an
// embedded document) to its class under the collation.
func distinctModel(t *testing.T, c *mongo.Collection, key string, class func(string) string) []string {
	t.Helper()
	cur, err := c.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	add := func(v any) {
		k := fmt.Sprintf("%T:%v", v, v)
		switch x := v.(type) {
		case string:
			k = "s:" + class(x)
		case bson.D:
			k = "d:" + class(fmt.Sprint(x))
		case int32, int64, float64:
			k = fmt.Sprintf("n:%v", x)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, fmt.Sprint(v))
		}
	}
	for _, d := range docs {
		v, ok := d[key]
		if !ok {
			continue
		}
		if arr, isArr := v.(bson.A); isArr {
			for _, e := range arr {
				add(e)
			}
			continue
		}
		add(v)
	}
	return out
}

// TestCollectionDefaultCollation: a collection created with a collation
// uses it for every operation that names none, and gives it to the
// indexes created without one; {locale: "simple"} overrides it.
func TestCollectionDefaultCollation(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("dcoll")
	if err := db.CreateCollection(ctx, "people", options.CreateCollection().SetCollation(driverCollation(ciColl))); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "plain", options.CreateCollection().SetCollation(&options.Collation{Locale: "simple"})); err != nil {
		t.Fatal(err)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		got := s.Options.Lookup("collation")
		switch {
		case s.Name == "people" && !reflect.DeepEqual(bson.Raw(got.Value).String(), bsonString(t, ciExpanded)):
			t.Errorf("people's collation is listed as %v", got)
		case s.Name == "plain" && got.Type != 0:
			t.Errorf("a simple collation is not stored, got %v", got)
		}
	}
	bad := bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 9}}
	createErr := db.RunCommand(ctx, bson.D{{Key: "create", Value: "bad"}, {Key: "collation", Value: bad}}).Err()
	_, findErr := db.Collection("people").Find(ctx, bson.D{}, options.Find().SetCollation(driverCollation(bad)))
	var ce, fe mongo.CommandError
	if !errors.As(createErr, &ce) || !errors.As(findErr, &fe) || ce.Code != fe.Code {
		t.Errorf("a bad collation: create %v, find %v", createErr, findErr)
	}

	people, plain := db.Collection("people"), db.Collection("plain")
	for _, c := range []*mongo.Collection{people, plain} {
		if _, err := c.InsertMany(ctx, ciDocs()); err != nil {
			t.Fatal(err)
		}
	}
	simple := &options.Collation{Locale: "simple"}
	checkCount := func(what string, c *mongo.Collection, filter bson.D, coll *options.Collation, want int64) {
		t.Helper()
		opts := options.Count()
		if coll != nil {
			opts.SetCollation(coll)
		}
		if n, err := c.CountDocuments(ctx, filter, opts); err != nil || n != want {
			t.Errorf("%s: count %d (%v), want %d", what, n, err, want)
		}
	}
	alice := bson.D{{Key: "name", Value: "alice"}}
	checkCount("default", people, alice, nil, 3)
	checkCount("simple override", people, alice, simple, 1)
	checkCount("simple collection", plain, alice, nil, 1)
	if ids := findIDs(t, people, alice, bson.D{{Key: "_id", Value: 1}}, nil, nil); fmt.Sprint(ids) != "[0 1 2]" {
		t.Errorf("find under the default: %v", ids)
	}
	if got := distinctValues(t, db, "city", bson.D{}, nil); fmt.Sprint(got) != "[Paris Oslo]" {
		t.Errorf("distinct under the default: %v", got)
	}
	res, err := people.UpdateMany(ctx, bson.D{{Key: "name", Value: "BOB"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "hit", Value: true}}}})
	if err != nil || res.ModifiedCount != 2 {
		t.Errorf("updateMany under the default: %+v %v", res, err)
	}
	del, err := people.DeleteMany(ctx, bson.D{{Key: "name", Value: "DAVE"}})
	if err != nil || del.DeletedCount != 2 {
		t.Errorf("deleteMany under the default: %+v %v", del, err)
	}
	var agg []bson.M
	cur, err := people.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "city", Value: "OSLO"}}}}, {{Key: "$count", Value: "n"}}})
	if err == nil {
		err = cur.All(ctx, &agg)
	}
	if err != nil || len(agg) != 1 || fmt.Sprint(agg[0]["n"]) != "6" {
		t.Errorf("aggregate under the default: %v %v", agg, err)
	}

	// Indexes created without a collation take the collection's.
	if _, err := createIx(db, "people", ixSpec(bson.D{{Key: "name", Value: 1}}, "name_ci"),
		ixSpec(bson.D{{Key: "city", Value: 1}}, "city_simple", bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}})); err != nil {
		t.Fatal(err)
	}
	ix := listIx(t, people)
	if got := lookupD(ix["name_ci"], "collation"); !reflect.DeepEqual(got, ciExpanded) {
		t.Errorf("name_ci collation %v", got)
	}
	if got := lookupD(ix["city_simple"], "collation"); got != nil {
		t.Errorf("city_simple collation %v", got)
	}
	if st := explainFind(t, db, "people", alice, nil, nil); !hasStage(st, "IXSCAN:name_ci") {
		t.Errorf("the default-collation index should serve a query under the default: %v", st)
	}
	_, err = createIx(db, "people", ixSpec(bson.D{{Key: "name", Value: "text"}}, "name_text"))
	if !errors.As(err, &ce) || ce.Code != 67 {
		t.Errorf("a text index inherits the collation and refuses it (mongod: code 67): %v", err)
	}
	if _, err := createIx(db, "people", ixSpec(bson.D{{Key: "name", Value: "text"}}, "name_text",
		bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}})); err != nil {
		t.Errorf("a text index with an explicit simple collation: %v", err)
	}
}

func bsonString(t *testing.T, d bson.D) string {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(raw).String()
}

func lookupD(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}

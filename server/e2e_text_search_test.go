package server_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// textIDs are the _ids filter finds in c, in the order found (sorted when
// sorted is true).
func textIDs(t *testing.T, c *mongo.Collection, filter any, sorted bool, opts ...options.Lister[options.FindOptions]) []int32 {
	t.Helper()
	cur, err := c.Find(ctx, filter, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	ids := []int32{}
	for _, d := range docs {
		ids = append(ids, d["_id"].(int32))
	}
	if sorted {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return ids
}

func search(s string, opts ...bson.E) bson.D {
	return bson.D{{Key: "$text", Value: append(bson.D{{Key: "$search", Value: s}}, opts...)}}
}

func wantTextIDs(t *testing.T, name string, got []int32, want ...int32) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v want %v", name, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: got %v want %v", name, got, want)
			return
		}
	}
}

func insertDocs(t *testing.T, c *mongo.Collection, docs ...bson.D) {
	t.Helper()
	for _, d := range docs {
		if _, err := c.InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTextLanguages(t *testing.T) {
	db, c := startCollection(t, "txt", "lang")
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "lang"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "body", Value: "text"}, {Key: "notes.body", Value: "text"}}},
		{Key: "name", Value: "t"}, {Key: "default_language", Value: "french"}, {Key: "language_override", Value: "idioma"},
	}}}})
	insertDocs(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "body", Value: "Les chevaux mangeaient à la maison"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "body", Value: "The horses were running home"}, {Key: "idioma", Value: "en"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "body", Value: "Die Kinder liefen nach Hause"}, {Key: "idioma", Value: "German"}},
		// A sub-document's override sets the language of its own strings.
		bson.D{{Key: "_id", Value: 4}, {Key: "notes", Value: bson.D{{Key: "body", Value: "los niños corrían"}, {Key: "idioma", Value: "es"}}}},
		bson.D{{Key: "_id", Value: 5}, {Key: "body", Value: "Élève, café"}, {Key: "idioma", Value: "none"}},
	)
	wantTextIDs(t, "french stems (cheval)", textIDs(t, c, search("cheval"), true), 1)
	wantTextIDs(t, "french stop words", textIDs(t, c, search("les la"), true))
	wantTextIDs(t, "english document, english query", textIDs(t, c, search("run", bson.E{Key: "$language", Value: "english"}), true), 2)
	wantTextIDs(t, "german document", textIDs(t, c, search("Kind", bson.E{Key: "$language", Value: "de"}), true), 3)
	wantTextIDs(t, "spanish sub-document", textIDs(t, c, search("niño", bson.E{Key: "$language", Value: "spanish"}), true), 4)
	wantTextIDs(t, "diacritics folded", textIDs(t, c, search("eleve cafe", bson.E{Key: "$language", Value: "none"}), true), 5)
	wantTextIDs(t, "$diacriticSensitive", textIDs(t, c, search("cafe", bson.E{Key: "$language", Value: "none"}, bson.E{Key: "$diacriticSensitive", Value: true}), true))
	wantTextIDs(t, "$diacriticSensitive exact", textIDs(t, c, search("café", bson.E{Key: "$language", Value: "none"}, bson.E{Key: "$diacriticSensitive", Value: true}), true), 5)
	wantTextIDs(t, "$caseSensitive", textIDs(t, c, search("élève", bson.E{Key: "$language", Value: "none"}, bson.E{Key: "$caseSensitive", Value: true}), true))
	wantTextIDs(t, "$caseSensitive exact", textIDs(t, c, search("Élève", bson.E{Key: "$language", Value: "none"}, bson.E{Key: "$caseSensitive", Value: true}), true), 5)

	// An update that changes a document's language re-indexes it in the new one.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "idioma", Value: "none"}}}}); err != nil {
		t.Fatal(err)
	}
	wantTextIDs(t, "after the language changed", textIDs(t, c, search("run", bson.E{Key: "$language", Value: "english"}), true))
	wantTextIDs(t, "unstemmed now", textIDs(t, c, search("running", bson.E{Key: "$language", Value: "none"}), true), 2)
	_, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "idioma", Value: "elvish"}}}})
	if me, ok := err.(mongo.WriteException); !ok || !me.HasErrorCode(17262) {
		t.Errorf("update to an unsupported language: %v", err)
	}

	_, err = c.Find(ctx, search("x", bson.E{Key: "$language", Value: "klingon"}))
	wantCode(t, err, 2, "BadValue")
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 6}, {Key: "body", Value: "x"}, {Key: "idioma", Value: "klingon"}})
	if me, ok := err.(mongo.WriteException); !ok || !me.HasErrorCode(17262) {
		t.Errorf("unsupported document language: %v", err)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 7}, {Key: "body", Value: "x"}, {Key: "idioma", Value: 3}})
	if me, ok := err.(mongo.WriteException); !ok || !me.HasErrorCode(17261) {
		t.Errorf("non-string document language: %v", err)
	}

	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "other"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "body", Value: "text"}}}, {Key: "name", Value: "t"}, {Key: "default_language", Value: "klingon"}}}}})
	wantCode(t, err, 67, "CannotCreateIndex")
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "other"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "body", Value: "text"}}}, {Key: "name", Value: "t"}, {Key: "textIndexVersion", Value: 2}}}}})
	wantCode(t, err, 238, "NotImplemented")
}

func TestTextWildcard(t *testing.T) {
	_, c := startCollection(t, "txt", "wild")
	insertDocs(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "apples"}, {Key: "language", Value: "english"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "deep", Value: bson.D{{Key: "er", Value: bson.A{"pears", "apple pie"}}}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: 42}, {Key: "s", Value: "bananas"}},
	)
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "$**", Value: "text"}}}); err != nil {
		t.Fatal(err)
	}
	wantTextIDs(t, "every string field", textIDs(t, c, search("apple"), true), 1, 2)
	wantTextIDs(t, "the language field is not text", textIDs(t, c, search("english"), true))
	specs, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[1].Name != "$**_text" {
		t.Fatalf("listIndexes: %v %v", specs, err)
	}
}

func TestTextCompound(t *testing.T) {
	db, c := startCollection(t, "txt", "comp")
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "comp"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "content", Value: "text"}, {Key: "b", Value: 1}}}, {Key: "name", Value: "a_1_content_text_b_1"}}}}})
	insertDocs(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 1}, {Key: "content", Value: "coffee beans"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}, {Key: "b", Value: 2}, {Key: "content", Value: "coffee cups"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 2}, {Key: "b", Value: 1}, {Key: "content", Value: "coffee"}},
		bson.D{{Key: "_id", Value: 4}, {Key: "content", Value: "coffee without a"}},
	)
	withA := func(a any, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "a", Value: a}, search("coffee")[0]}, extra...)
	}
	wantTextIDs(t, "prefix equality", textIDs(t, c, withA(1), true), 1, 2)
	wantTextIDs(t, "prefix $eq", textIDs(t, c, withA(bson.D{{Key: "$eq", Value: 2}}), true), 3)
	wantTextIDs(t, "prefix null finds the documents without a", textIDs(t, c, withA(nil), true), 4)
	wantTextIDs(t, "suffix filtered", textIDs(t, c, withA(1, bson.E{Key: "b", Value: bson.D{{Key: "$gt", Value: 1}}}), true), 2)
	wantTextIDs(t, "suffix $lt", textIDs(t, c, withA(1, bson.E{Key: "b", Value: bson.D{{Key: "$lt", Value: 2}}}), true), 1)
	wantTextIDs(t, "suffix $in", textIDs(t, c, withA(1, bson.E{Key: "b", Value: bson.D{{Key: "$in", Value: bson.A{2, 3}}}}), true), 2)
	wantTextIDs(t, "suffix of another type", textIDs(t, c, withA(1, bson.E{Key: "b", Value: "x"}), true))
	// The suffix bounds skip entries before the fetch: two entries for
	// "coffee" under a: 1, one document fetched.
	var stats struct {
		Keys     int32 `bson:"totalKeysExamined"`
		Docs     int32 `bson:"totalDocsExamined"`
		Returned int32 `bson:"nReturned"`
	}
	var reply struct {
		Stats bson.Raw `bson:"executionStats"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "comp"},
		{Key: "filter", Value: withA(1, bson.E{Key: "b", Value: 2})}}}, {Key: "verbosity", Value: "executionStats"}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	if err := bson.Unmarshal(reply.Stats, &stats); err != nil || stats.Keys != 2 || stats.Docs != 1 || stats.Returned != 1 {
		t.Errorf("suffix bounds: %v", stats)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "comp"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}, search("coffee -cups \"Coffee beans\"")[0]}}}}})
	if plan := fmt.Sprint(ex["queryPlanner"]); !strings.Contains(plan, `"indexPrefix":{"a":{"$numberInt":"1"}}`) ||
		!strings.Contains(plan, `"parsedTextQuery":{"terms":["coffe","bean"],"negatedTerms":["cup"],"phrases":["coffee beans"],"negatedPhrases":[]}`) {
		t.Errorf("explain of a compound text query: %v", plan)
	}
	for name, f := range map[string]bson.D{
		"no prefix":    search("coffee"),
		"prefix range": withA(bson.D{{Key: "$gt", Value: 0}}),
		"prefix $in":   withA(bson.D{{Key: "$in", Value: bson.A{1, 2}}}),
	} {
		_, err := c.Find(ctx, f)
		if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(291) {
			t.Errorf("%s: %v, want NoQueryExecutionPlans", name, err)
		}
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "a", Value: bson.A{1, 2}}, {Key: "content", Value: "x"}})
	if me, ok := err.(mongo.WriteException); !ok || !me.HasErrorCode(16675) {
		t.Errorf("array prefix: %v", err)
	}
	specs, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[1].Name != "a_1_content_text_b_1" {
		t.Fatalf("listIndexes: %v %v", specs, err)
	}
	var key bson.D
	if err := bson.Unmarshal(specs[1].KeysDocument, &key); err != nil || len(key) != 4 || key[0].Key != "a" || key[1].Key != "_fts" || key[3].Key != "b" {
		t.Errorf("compound key pattern %v", key)
	}
	mustRun(t, db, bson.D{{Key: "collMod", Value: "comp"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1_content_text_b_1"}, {Key: "hidden", Value: true}}}})
	_, err = c.Find(ctx, withA(1))
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(27) {
		t.Errorf("$text with the text index hidden: %v", err)
	}
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "comp2"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "x", Value: "text"}, {Key: "b", Value: 1}, {Key: "y", Value: "text"}}}, {Key: "name", Value: "bad"}}}}})
	wantCode(t, err, 67, "CannotCreateIndex")
}

func TestTextScoresSort(t *testing.T) {
	_, c := startCollection(t, "txt", "scores")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}},
		Options: options.Index().SetWeights(bson.D{{Key: "title", Value: 10}})}); err != nil {
		t.Fatal(err)
	}
	insertDocs(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "title", Value: "tea"}, {Key: "body", Value: "coffee"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "title", Value: "coffee"}, {Key: "body", Value: "tea"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "title", Value: "x"}, {Key: "body", Value: "coffee coffee and more coffee"}},
	)
	meta := bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}
	opts := options.Find().SetProjection(meta).SetSort(meta)
	wantTextIDs(t, "find sorted by score", textIDs(t, c, search("coffee"), false, opts), 2, 3, 1)

	// A hint of the text index is taken; one of another index leaves the
	// $text without one (291); an unknown one is BadValue.
	wantTextIDs(t, "hinted by name", textIDs(t, c, search("coffee"), true, options.Find().SetHint("title_text_body_text")), 1, 2, 3)
	wantTextIDs(t, "hinted by key", textIDs(t, c, search("coffee"), true, options.Find().SetHint(bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}})), 1, 2, 3)
	_, err := c.Find(ctx, search("coffee"), options.Find().SetHint(bson.D{{Key: "_id", Value: 1}}))
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(291) {
		t.Errorf("$text hinted to _id: %v", err)
	}
	_, err = c.Find(ctx, search("coffee"), options.Find().SetHint("nope"))
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(2) {
		t.Errorf("$text hinted to no index: %v", err)
	}

	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: search("coffee")}},
		{{Key: "$sort", Value: meta}},
		{{Key: "$project", Value: meta}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	// title "coffee" alone: 10 x 1 x (0.5 x 1/1 + 0.5); no 1.1 boost, as
	// the term is the stem "coffe", not the whole string.
	if len(out) != 3 || out[0]["_id"] != int32(2) || out[0]["score"] != 10.0 || out[2]["_id"] != int32(1) || out[2]["score"] != 1.0 {
		t.Fatalf("aggregate sorted by score: %v", out)
	}
	_, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}, {{Key: "$match", Value: search("coffee")}}})
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(17313) {
		t.Errorf("$text not in the first stage: %v", err)
	}
}

func TestTextIndexVersioned(t *testing.T) {
	ts := startServer(t)
	cl := ts.client()
	db := cl.Database("vtxt")
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "docs"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "k", Value: 1}, {Key: "body", Value: "text"}}}, {Key: "name", Value: "kt"},
		{Key: "default_language", Value: "spanish"}, {Key: "language_override", Value: "lengua"}, {Key: "weights", Value: bson.D{{Key: "body", Value: 3}}},
	}}}})
	insertDocs(t, db.Collection("docs"), bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}, {Key: "body", Value: "los niños corrían"}})
	checkSpec := func(name string, c *mongo.Collection, want ...int32) {
		t.Helper()
		cur, err := c.Indexes().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var specs []bson.M
		if err := cur.All(ctx, &specs); err != nil {
			t.Fatal(err)
		}
		if len(specs) != 2 || specs[1]["default_language"] != "spanish" || specs[1]["language_override"] != "lengua" ||
			specs[1]["textIndexVersion"] != int32(3) || !strings.Contains(fmt.Sprint(specs[1]["weights"]), "body") {
			t.Errorf("%s: listIndexes %v", name, specs)
		}
		if len(want) == 0 {
			want = []int32{1}
		}
		wantTextIDs(t, name, textIDs(t, c, bson.D{{Key: "k", Value: 1}, search("niño")[0]}, true), want...)
	}
	checkSpec("created", db.Collection("docs"))
	ts.restart()
	cl = ts.client()
	db = cl.Database("vtxt")
	checkSpec("after restart", db.Collection("docs"))

	vc(t, cl, "vtxt", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "text index"}})
	vc(t, cl, "vtxt", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "side"}})
	side := cl.Database("vtxt@side").Collection("docs")
	checkSpec("on a branch", side)
	insertDocs(t, side, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 1}, {Key: "body", Value: "el niño"}})
	vc(t, cl, "vtxt@side", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one more"}})
	vc(t, cl, "vtxt", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "side"}})
	wantTextIDs(t, "merged", textIDs(t, db.Collection("docs"), bson.D{{Key: "k", Value: 1}, search("niño")[0]}, true), 1, 2)

	// Dropping the index is a working-set change that a hard reset undoes.
	if err := db.Collection("docs").Indexes().DropOne(ctx, "kt"); err != nil {
		t.Fatal(err)
	}
	vc(t, cl, "vtxt", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	checkSpec("after reset", db.Collection("docs"), 1, 2)
}

func TestTextPartial(t *testing.T) {
	db, c := startCollection(t, "txt", "part")
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "part"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "s", Value: "text"}}}, {Key: "name", Value: "t"},
		{Key: "partialFilterExpression", Value: bson.D{{Key: "live", Value: true}}}}}}})
	insertDocs(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "apples"}, {Key: "live", Value: true}},
		bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "apples"}, {Key: "live", Value: false}},
	)
	wantTextIDs(t, "filter repeats the partial filter", textIDs(t, c, append(search("apple"), bson.E{Key: "live", Value: true}), true), 1)
	wantTextIDs(t, "under $and", textIDs(t, c, bson.D{{Key: "$and", Value: bson.A{search("apple"), bson.D{{Key: "live", Value: true}}}}}, true), 1)
	// Without it the index would miss document 2: no plan, as on mongod.
	_, err := c.Find(ctx, search("apple"))
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(291) {
		t.Errorf("$text on a partial text index without its filter: %v", err)
	}
}

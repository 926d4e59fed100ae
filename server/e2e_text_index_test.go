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

func TestTextIndex(t *testing.T) {
	db, c := startCollection(t, "txt", "articles")
	docs := []bson.D{
		{{Key: "_id", Value: 1}, {Key: "title", Value: "Running shoes"}, {Key: "body", Value: "The best shoes for runners who run daily"}},
		{{Key: "_id", Value: 2}, {Key: "title", Value: "Coffee"}, {Key: "body", Value: "Brewing coffee at home: the coffee guide"}},
		{{Key: "_id", Value: 3}, {Key: "title", Value: "Tea"}, {Key: "body", Value: "Green tea and black tea"}},
		{{Key: "_id", Value: 4}, {Key: "title", Value: "Morning run"}, {Key: "body", Value: "Coffee before running"}},
		{{Key: "_id", Value: 5}, {Key: "title", Value: 42}, {Key: "other", Value: "coffee"}},
	}
	for _, d := range docs {
		if _, err := c.InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// Without a text index, $text is error 27.
	_, err := c.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "coffee"}}}})
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(27) {
		t.Fatalf("no text index: %v", err)
	}
	res := mustRun(t, db, bson.D{{Key: "createIndexes", Value: "articles"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}}},
		{Key: "name", Value: "title_text_body_text"}, {Key: "weights", Value: bson.D{{Key: "title", Value: 10}}},
	}}}})
	if res["numIndexesAfter"] != int32(2) {
		t.Fatalf("createIndexes: %v", res)
	}
	// A second text index is refused.
	_, err = run(t, db, bson.D{{Key: "createIndexes", Value: "articles"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "other", Value: "text"}}}, {Key: "name", Value: "other_text"},
	}}}})
	if me, ok := err.(mongo.CommandError); !ok || me.Code != 67 {
		t.Fatalf("second text index: %v", err)
	}
	specs, err := c.Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[1].Name != "title_text_body_text" {
		t.Fatalf("listIndexes: %+v", specs[1])
	}

	ids := func(filter any, opts ...options.Lister[options.FindOptions]) []int32 {
		t.Helper()
		return textIDs(t, c, filter, false, opts...)
	}
	sorted := func(x []int32) []int32 { sort.Slice(x, func(i, j int) bool { return x[i] < x[j] }); return x }
	text := func(s string) bson.D { return bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: s}}}} }
	check := func(name string, got, want []int32) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: got %v want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: got %v want %v", name, got, want)
			}
		}
	}
	check("coffee", sorted(ids(text("coffee"))), []int32{2, 4})
	check("stemmed run", sorted(ids(text("runs"))), []int32{1, 4})
	check("any term", sorted(ids(text("tea shoes"))), []int32{1, 3})
	check("negated", sorted(ids(text("coffee -running"))), []int32{2})
	check("phrase", sorted(ids(text("\"black tea\""))), []int32{3})
	check("phrase miss", sorted(ids(text("\"tea black\""))), []int32{})
	check("stop words only", sorted(ids(text("the and"))), []int32{})
	check("with other predicates", ids(bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 3}}}, {Key: "$text", Value: bson.D{{Key: "$search", Value: "coffee"}}}}), []int32{4})

	// Scores: the title weighs 10, so doc 4 ("Morning run") outranks doc 1 for "run".
	cur, err := c.Find(ctx, text("run"), options.Find().
		SetProjection(bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).
		SetSort(bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	var scored []bson.M
	if err := cur.All(ctx, &scored); err != nil {
		t.Fatal(err)
	}
	if len(scored) != 2 || scored[0]["score"].(float64) < scored[1]["score"].(float64) || scored[1]["score"].(float64) <= 0 {
		t.Fatalf("scores: %v", scored)
	}
	if _, ok := scored[0]["title"]; !ok {
		t.Fatalf("score projection drops fields: %v", scored[0])
	}

	// Index upkeep: updates and deletes change what matches.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "body", Value: "now about coffee"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	check("after writes", sorted(ids(text("coffee"))), []int32{3, 4})
	check("green gone", sorted(ids(text("green"))), []int32{})
	n, err := c.CountDocuments(ctx, text("coffee"))
	if err != nil || n != 2 {
		t.Fatalf("count: %d %v", n, err)
	}

	// $text as a clause of a top-level $or: the other clauses must be
	// indexed (mongod's rule), and the answer is the union.
	orText := func(clauses ...bson.D) bson.D {
		arr := bson.A{text("coffee")}
		for _, cl := range clauses {
			arr = append(arr, cl)
		}
		return bson.D{{Key: "$or", Value: arr}}
	}
	check("$or with _id", sorted(ids(orText(bson.D{{Key: "_id", Value: 1}}))), []int32{1, 3, 4})
	check("$or alone", sorted(ids(orText())), []int32{3, 4})
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "title", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	byTitle := bson.D{{Key: "title", Value: "Tea"}}
	check("$or with an indexed field", sorted(ids(orText(byTitle, bson.D{{Key: "_id", Value: 5}}))), []int32{3, 4, 5})
	check("$or under $and", sorted(ids(bson.D{{Key: "$and", Value: bson.A{
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 4}}}}, orText(byTitle)}}})), []int32{4})
	if n, err := c.CountDocuments(ctx, orText(byTitle)); err != nil || n != 2 {
		t.Errorf("count of $text under $or: %d %v", n, err)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "articles"}, {Key: "filter", Value: orText(byTitle)}}}})
	if plan := fmt.Sprint(ex["queryPlanner"]); !strings.Contains(plan, "OR") || !strings.Contains(plan, "TEXT_MATCH") || !strings.Contains(plan, "title_1") {
		t.Errorf("explain of $text under $or should show an OR of the text and index plans: %v", plan)
	}
	_, err = c.Find(ctx, orText(bson.D{{Key: "body", Value: "x"}}))
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(291) {
		t.Errorf("an unindexed clause beside $text under $or: %v", err)
	}
	_, err = c.Find(ctx, bson.D{{Key: "$nor", Value: bson.A{text("coffee")}}})
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(2) {
		t.Errorf("$text under $nor: %v", err)
	}
	if err := c.Indexes().DropOne(ctx, "title_1"); err != nil {
		t.Fatal(err)
	}

	// $meta without $text.
	_, err = c.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}))
	if me, ok := err.(mongo.ServerError); !ok || !me.HasErrorCode(40218) {
		t.Fatalf("textScore sort without $text: %v", err)
	}

	// Explain shows the text plan.
	ex = mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "articles"}, {Key: "filter", Value: text("coffee")}}}})
	if !strings.Contains(fmt.Sprint(ex["queryPlanner"]), "TEXT_MATCH") {
		t.Fatalf("explain: %v", ex)
	}

	// Dropping the index makes $text an error again; default_language none keeps stop words.
	if err := c.Indexes().DropOne(ctx, "title_text_body_text"); err != nil {
		t.Fatal(err)
	}
	mustRun(t, db, bson.D{{Key: "createIndexes", Value: "articles"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "body", Value: "text"}}}, {Key: "name", Value: "b"}, {Key: "default_language", Value: "none"},
	}}}})
	check("language none", sorted(ids(text("the"))), []int32{1})
}

func TestTextAggregate(t *testing.T) {
	_, c := startCollection(t, "txt", "a")
	for i, s := range []string{"red apples", "green apples and pears", "bananas"} {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: s}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "s", Value: "text"}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "apple"}}}}}},
		{{Key: "$project", Value: bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0]["score"].(float64) <= 0 {
		t.Fatalf("aggregate: %v", out)
	}
}

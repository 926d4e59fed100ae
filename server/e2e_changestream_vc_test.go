package server_test

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// csModel is a database's documents as a change stream's reader rebuilds
// them: collection, then _id (formatted), then the document as extended
// JSON, so that models and find() compare exactly.
type csModel map[string]map[string]string

func csKey(v any) string { return fmt.Sprintf("%#v", v) }

func csJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(v, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// csRead is the model of what find() returns in each of a database's
// collections.
func csRead(t *testing.T, db *mongo.Database) csModel {
	t.Helper()
	names, err := db.ListCollectionNames(ctx, bson.M{})
	if err != nil {
		t.Fatal(err)
	}
	m := csModel{}
	for _, name := range names {
		cur, err := db.Collection(name).Find(ctx, bson.M{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		m[name] = map[string]string{}
		for _, d := range docs {
			var id struct {
				ID any `bson:"_id"`
			}
			if err := bson.Unmarshal(d, &id); err != nil {
				t.Fatal(err)
			}
			m[name][csKey(id.ID)] = csJSON(t, d)
		}
	}
	return m
}

// apply applies a stream's document events to the model; it fails on an
// event it cannot apply.
func (m csModel) apply(t *testing.T, raws []bson.Raw) {
	t.Helper()
	for _, raw := range raws {
		var ev struct {
			Op  string                `bson:"operationType"`
			NS  struct{ Coll string } `bson:"ns"`
			Key struct {
				ID any `bson:"_id"`
			} `bson:"documentKey"`
			Doc bson.Raw              `bson:"fullDocument"`
			To  struct{ Coll string } `bson:"to"`
		}
		if err := bson.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		coll := m[ev.NS.Coll]
		if coll == nil && (ev.Op == "insert" || ev.Op == "replace" || ev.Op == "update") {
			coll = map[string]string{}
			m[ev.NS.Coll] = coll
		}
		switch ev.Op {
		case "insert", "replace", "update":
			if len(ev.Doc) == 0 {
				t.Fatalf("a %s event without fullDocument: %v", ev.Op, raw)
			}
			coll[csKey(ev.Key.ID)] = csJSON(t, ev.Doc)
		case "delete":
			if _, ok := coll[csKey(ev.Key.ID)]; !ok {
				t.Fatalf("a delete of a document the model does not have: %v", raw)
			}
			delete(coll, csKey(ev.Key.ID))
		case "drop":
			delete(m, ev.NS.Coll)
		case "rename":
			m[ev.To.Coll] = coll
			delete(m, ev.NS.Coll)
		default:
			t.Fatalf("an event the model cannot apply: %v", raw)
		}
	}
}

// same compares a model with the database, empty collections aside (a
// stream without expanded events does not report creates).
func (m csModel) same(t *testing.T, db *mongo.Database, step string) {
	t.Helper()
	got := csRead(t, db)
	for _, mm := range []csModel{m, got} {
		for name, docs := range mm {
			if len(docs) == 0 {
				delete(mm, name)
			}
		}
	}
	if !reflect.DeepEqual(m, got) {
		t.Fatalf("%s: the events applied to the model give\n%v\nbut the database holds\n%v", step, m.String(), got.String())
	}
}

func (m csModel) String() string {
	var lines []string
	for name, docs := range m {
		for _, d := range docs {
			lines = append(lines, name+" "+d)
		}
	}
	sort.Strings(lines)
	return fmt.Sprint(lines)
}

// csDrain reads a stream's events until it has been idle for two
// getMores.
func csDrain(t *testing.T, cs *mongo.ChangeStream) []bson.Raw {
	t.Helper()
	var out []bson.Raw
	for idle := 0; idle < 2; {
		if cs.TryNext(ctx) {
			out = append(out, append(bson.Raw(nil), cs.Current...))
			idle = 0
			continue
		}
		if err := cs.Err(); err != nil {
			t.Fatalf("change stream: %v", err)
		}
		idle++
	}
	return out
}

// TestChangeStreamFollowsVersionControl: a stream on main reports what
// version control does to main's documents: a merge (fast-forward and
// three-way), a hard reset, a revert and a cherry-pick each give events
// that, applied to a model of main, leave it equal to main's find(); the
// branch's own writes give it none.
func TestChangeStreamFollowsVersionControl(t *testing.T) {
	c := startServer(t).client()
	main, feature := c.Database("shop"), c.Database("shop@feature")
	run := func(db string, cmd bson.D) bson.M {
		t.Helper()
		return vc(t, c, db, cmd)
	}
	commit := func(db, msg string) string {
		t.Helper()
		return run(db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}})["commitId"].(string)
	}
	write := func(db *mongo.Database, coll string, fn func(*mongo.Collection) error) {
		t.Helper()
		if err := fn(db.Collection(coll)); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(db *mongo.Database, coll string, docs ...any) {
		t.Helper()
		write(db, coll, func(c *mongo.Collection) error { _, err := c.InsertMany(ctx, docs); return err })
	}
	set := func(db *mongo.Database, coll string, id any, v any) {
		t.Helper()
		write(db, coll, func(c *mongo.Collection) error {
			_, err := c.UpdateOne(ctx, bson.M{"_id": id}, bson.M{"$set": bson.M{"v": v}})
			return err
		})
	}
	del := func(db *mongo.Database, coll string, id any) {
		t.Helper()
		write(db, coll, func(c *mongo.Collection) error { _, err := c.DeleteOne(ctx, bson.M{"_id": id}); return err })
	}

	insert(main, "items", bson.M{"_id": 1, "v": 1}, bson.M{"_id": 2, "v": 1}, bson.M{"_id": 3, "v": 1, "keep": true})
	seed := commit("shop", "seed")
	model := csRead(t, main)
	cs := csWatch(t, main, nil, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	run("shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})

	// The branch's writes: nothing on main until the merge.
	insert(feature, "items", bson.M{"_id": 4, "v": 1})
	set(feature, "items", 1, 2)
	del(feature, "items", 2)
	insert(feature, "extra", bson.M{"_id": "x", "v": 1})
	commit("shop@feature", "feature work")
	csNone(t, cs)

	step := func(name string) {
		t.Helper()
		evs := csDrain(t, cs)
		model.apply(t, evs)
		model.same(t, main, name)
		t.Logf("%s: %d events", name, len(evs))
	}
	run("shop", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	step("fast-forward merge")

	// A three-way merge: both sides moved.
	set(main, "items", 3, 5)
	commit("shop", "main: v5 on 3")
	step("main's own writes")
	set(feature, "items", 4, 9)
	insert(feature, "items", bson.M{"_id": 5, "v": 1})
	del(feature, "extra", "x")
	commit("shop@feature", "feature: more")
	if m := run("shop", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}}); m["fastForward"] != false {
		t.Fatalf("want a three-way merge: %v", m)
	}
	step("three-way merge")

	// A hard reset drops uncommitted writes, then goes back to the seed.
	insert(main, "items", bson.M{"_id": 6, "v": 1})
	del(main, "items", 1)
	step("uncommitted writes")
	run("shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}})
	step("hard reset to HEAD")
	run("shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}, {Key: "to", Value: seed}})
	step("hard reset to the seed commit")

	// A revert of a commit on main.
	set(main, "items", 1, 7)
	insert(main, "items", bson.M{"_id": 7, "v": 1})
	undo := commit("shop", "to be reverted")
	step("commit to revert")
	run("shop", bson.D{{Key: "dumboRevert", Value: undo}})
	step("revert")

	// A cherry-pick of a commit made on another branch.
	run("shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "picks"}})
	picks := c.Database("shop@picks")
	insert(picks, "items", bson.M{"_id": 8, "v": 1})
	set(picks, "items", 3, 8)
	pick := commit("shop@picks", "to be picked")
	csNone(t, cs)
	run("shop", bson.D{{Key: "dumboCherryPick", Value: pick}})
	step("cherry-pick")
}

// csVersionOps are a raw stream's events as "op" or "op:field=value" for
// the version-control events' operationDescription fields named.
func csVersionOps(evs []bson.M) []string {
	var out []string
	for _, ev := range evs {
		op := ev["operationType"].(string)
		if id := get(ev, "documentKey", "_id"); id != nil {
			op += fmt.Sprintf(" %v", id)
		}
		for _, f := range []string{"branch", "tag", "mergeIn", "mode"} {
			if v := get(ev, "operationDescription", f); v != nil {
				op += fmt.Sprintf(" %s=%v", f, v)
			}
		}
		out = append(out, op)
	}
	return out
}

// TestChangeStreamVersionEvents: with DumboDB's showVersionEvents option
// in the $changeStream stage, a stream on main reports dumboCommit (with
// operationDescription.commitId), dumboBranch, dumboTag, dumboMerge and
// dumboReset, in order among the document events those operations cause;
// without it, only the document events. A branch's own commit is not
// main's event.
func TestChangeStreamVersionEvents(t *testing.T) {
	c := startServer(t).client()
	main := c.Database("shop")
	if err := main.CreateCollection(ctx, "items"); err != nil {
		t.Fatal(err)
	}
	with, _ := csOpenRaw(t, main, "items", bson.D{{Key: "showVersionEvents", Value: true}})
	without, _ := csOpenRaw(t, main, "items", bson.D{})
	dbWide, _ := csOpenRaw(t, main, "", bson.D{{Key: "showVersionEvents", Value: true}})

	if _, err := main.Collection("items").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	seed := vc(t, c, "shop", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "seed"}})["commitId"]
	vc(t, c, "shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}})
	vc(t, c, "shop", bson.D{{Key: "dumboTag", Value: "v1"}})
	if _, err := c.Database("shop@feature").Collection("items").InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	onFeature := vc(t, c, "shop@feature", bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "feature"}})["commitId"]
	merged := vc(t, c, "shop", bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "feature"}})
	vc(t, c, "shop", bson.D{{Key: "dumboReset", Value: 1}, {Key: "hard", Value: true}, {Key: "to", Value: seed}})

	want := []string{"insert 1", "dumboCommit", "dumboBranch branch=feature", "dumboTag tag=v1", "insert 2",
		"dumboMerge mergeIn=feature", "delete 2", "dumboReset mode=hard"}
	for name, s := range map[string]*csRawStream{"collection": with, "database": dbWide} {
		evs := s.next(len(want))
		if got := csVersionOps(evs); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s stream with showVersionEvents:\n got %q\nwant %q", name, got, want)
		}
		if got := get(evs[1], "operationDescription", "commitId"); got != seed {
			t.Fatalf("dumboCommit's commitId %v, the commit was %v", got, seed)
		}
		if got := get(evs[5], "operationDescription", "commitId"); got != merged["commitId"] || got != onFeature {
			t.Fatalf("dumboMerge's commitId %v, the merge answered %v (feature's head %v)", got, merged["commitId"], onFeature)
		}
		if got := get(evs[7], "operationDescription", "commitId"); got != seed {
			t.Fatalf("dumboReset's commitId %v, want %v", got, seed)
		}
		for _, ev := range evs {
			if get(ev, "ns", "db") != "shop" {
				t.Fatalf("event ns %v", ev)
			}
		}
		if more := s.getMore(csAwait); len(more) != 0 {
			t.Fatalf("%s stream: more events %v", name, more)
		}
	}
	evs := without.next(3)
	if got := csVersionOps(evs); fmt.Sprint(got) != fmt.Sprint([]string{"insert 1", "insert 2", "delete 2"}) {
		t.Fatalf("stream without showVersionEvents: %q", got)
	}
	if more := without.getMore(csAwait); len(more) != 0 {
		t.Fatalf("more events without showVersionEvents: %v", more)
	}
}

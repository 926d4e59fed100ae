package server_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Helpers of the change stream tests (e2e_changestream_*_test.go).

// csWatcher is what can open a change stream: a collection, a database or
// a client.
type csWatcher interface {
	Watch(context.Context, any, ...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error)
}

// csAwait is how long the streams of these tests wait on each getMore.
const csAwait = 300 * time.Millisecond

// csWatch opens a change stream that waits csAwait on each getMore and is
// closed at the end of the test.
func csWatch(t *testing.T, w csWatcher, pipeline any, opts ...*options.ChangeStreamOptionsBuilder) *mongo.ChangeStream {
	t.Helper()
	if pipeline == nil {
		pipeline = mongo.Pipeline{}
	}
	o := options.ChangeStream()
	if len(opts) > 0 {
		o = opts[0]
	}
	o.SetMaxAwaitTime(csAwait)
	cs, err := w.Watch(ctx, pipeline, o)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(func() { cs.Close(context.Background()) })
	return cs
}

// csEvents reads n events.
func csEvents(t *testing.T, cs *mongo.ChangeStream, n int) []bson.M {
	t.Helper()
	out := make([]bson.M, 0, n)
	for range n {
		out = append(out, nextEvent(t, cs))
	}
	return out
}

// csNone asserts that no event arrives for a few getMores.
func csNone(t *testing.T, cs *mongo.ChangeStream) {
	t.Helper()
	for range 3 {
		if cs.TryNext(ctx) {
			var ev bson.M
			cs.Decode(&ev)
			t.Fatalf("unexpected event %v", ev)
		}
		if err := cs.Err(); err != nil {
			t.Fatalf("change stream: %v", err)
		}
	}
}

// csErr reads the stream until it fails and returns the error as a
// command error.
func csErr(t *testing.T, cs *mongo.ChangeStream) mongo.CommandError {
	t.Helper()
	for range 20 {
		if cs.TryNext(ctx) {
			var ev bson.M
			cs.Decode(&ev)
			t.Fatalf("an event instead of an error: %v", ev)
		}
		if err := cs.Err(); err != nil {
			var ce mongo.CommandError
			if !errors.As(err, &ce) {
				t.Fatalf("want a command error, got %v (%T)", err, err)
			}
			return ce
		}
	}
	t.Fatal("the stream did not fail")
	return mongo.CommandError{}
}

// wantStreamErr asserts an error's code and whether it carries label.
func wantStreamErr(t *testing.T, ce mongo.CommandError, code int32, label string, labeled bool) {
	t.Helper()
	if ce.Code != code {
		t.Fatalf("want code %d, got %d %s: %s", code, ce.Code, ce.Name, ce.Message)
	}
	if ce.HasErrorLabel(label) != labeled {
		t.Fatalf("error %d labels %v: want %s=%v", ce.Code, ce.Labels, label, labeled)
	}
}

// csOp returns an event's operationType and documentKey._id.
func csOp(ev bson.M) (string, any) {
	return ev["operationType"].(string), get(ev, "documentKey", "_id")
}

// wantOps asserts the events' operation types and document keys
// ("insert:1"-style pairs are compared as op and _id).
func wantOps(t *testing.T, evs []bson.M, want ...[2]any) {
	t.Helper()
	if len(evs) != len(want) {
		t.Fatalf("got %d events, want %d: %v", len(evs), len(want), evs)
	}
	for i, ev := range evs {
		op, id := csOp(ev)
		if op != want[i][0] || !reflect.DeepEqual(id, want[i][1]) {
			t.Fatalf("event %d is %s %v, want %s %v: %v", i, op, id, want[i][0], want[i][1], ev)
		}
	}
}

// csDoc decodes a field of an event holding a document (nil when it is
// missing, bson.M{"null": true} when it is null) into bson.M.
func csDoc(t *testing.T, ev bson.M, field string) bson.M {
	t.Helper()
	v, ok := ev[field]
	if !ok {
		return nil
	}
	if v == nil {
		return bson.M{"null": true}
	}
	raw, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m bson.M
	if err := bson.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func withImages() *options.CreateCollectionOptionsBuilder {
	return options.CreateCollection().SetChangeStreamPreAndPostImages(bson.M{"enabled": true})
}

// TestChangeStreamFullDocumentDefaultAndLookup: by default an update
// event has no fullDocument; with updateLookup it holds the document as
// it is when the event is read (not as the update left it), and null once
// the document is deleted.
func TestChangeStreamFullDocumentDefaultAndLookup(t *testing.T) {
	_, coll := startCollection(t, "shop", "items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "a": 1}); err != nil {
		t.Fatal(err)
	}
	def := csWatch(t, coll, nil)
	look := csWatch(t, coll, nil, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	set := func(a int) {
		t.Helper()
		if _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"a": a}}); err != nil {
			t.Fatal(err)
		}
	}

	set(2)
	ev := nextEvent(t, def)
	if _, has := ev["fullDocument"]; ev["operationType"] != "update" || has {
		t.Fatalf("default update event: %v", ev)
	}
	ev = nextEvent(t, look)
	if fd := csDoc(t, ev, "fullDocument"); ev["operationType"] != "update" || fd["a"] != int32(2) || fd["_id"] != int32(1) {
		t.Fatalf("updateLookup event: %v", ev)
	}

	// Two updates before reading: both events look up the current a: 4.
	set(3)
	set(4)
	for _, ev := range csEvents(t, look, 2) {
		if fd := csDoc(t, ev, "fullDocument"); fd["a"] != int32(4) {
			t.Fatalf("updateLookup gives the current document, got %v", ev)
		}
		if get(ev, "updateDescription", "updatedFields", "a") == nil {
			t.Fatalf("no updateDescription with updateLookup: %v", ev)
		}
	}

	// An update whose document is deleted before the event is read.
	set(5)
	if _, err := coll.DeleteOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	evs := csEvents(t, look, 2)
	if fd := csDoc(t, evs[0], "fullDocument"); evs[0]["operationType"] != "update" || fd["null"] != true {
		t.Fatalf("updateLookup of a deleted document: want fullDocument null, got %v", evs[0])
	}
	if _, has := evs[1]["fullDocument"]; evs[1]["operationType"] != "delete" || has {
		t.Fatalf("delete event: %v", evs[1])
	}
}

// TestChangeStreamFullDocumentPostImages: whenAvailable and required give
// an update's post-image on a collection that keeps images (set at create
// or by collMod): the document as that update left it; whenAvailable
// gives null without images, and required fails the getMore with
// NoMatchingDocument (47), which is not resumable.
func TestChangeStreamFullDocumentPostImages(t *testing.T) {
	db, _ := startCollection(t, "shop", "items")
	if err := db.CreateCollection(ctx, "imaged", withImages()); err != nil {
		t.Fatal(err)
	}
	imaged, plain := db.Collection("imaged"), db.Collection("plain")
	for _, c := range []*mongo.Collection{imaged, plain} {
		if _, err := c.InsertOne(ctx, bson.M{"_id": 1, "a": 1}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(c *mongo.Collection, a int) {
		t.Helper()
		if _, err := c.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"a": a}}); err != nil {
			t.Fatal(err)
		}
	}

	for _, mode := range []options.FullDocument{options.WhenAvailable, options.Required} {
		t.Run(string(mode)+"/images", func(t *testing.T) {
			cs := csWatch(t, imaged, nil, options.ChangeStream().SetFullDocument(mode))
			update(imaged, 10)
			update(imaged, 11)
			for i, ev := range csEvents(t, cs, 2) {
				if fd := csDoc(t, ev, "fullDocument"); fd["a"] != int32(10+i) || fd["_id"] != int32(1) {
					t.Fatalf("post-image of update %d: %v", i, ev)
				}
			}
		})
	}

	t.Run("whenAvailable/none", func(t *testing.T) {
		cs := csWatch(t, plain, nil, options.ChangeStream().SetFullDocument(options.WhenAvailable))
		update(plain, 2)
		ev := nextEvent(t, cs)
		if fd := csDoc(t, ev, "fullDocument"); ev["operationType"] != "update" || fd["null"] != true {
			t.Fatalf("whenAvailable without images: want fullDocument null, got %v", ev)
		}
	})

	t.Run("required/none", func(t *testing.T) {
		cs := csWatch(t, plain, nil, options.ChangeStream().SetFullDocument(options.Required))
		update(plain, 3)
		ce := csErr(t, cs)
		wantStreamErr(t, ce, 47, "ResumableChangeStreamError", false)
		if ce.Name != "NoMatchingDocument" {
			t.Fatalf("code name %q", ce.Name)
		}
	})

	// Inserts and replaces carry their document in every mode.
	t.Run("required/replace", func(t *testing.T) {
		cs := csWatch(t, plain, nil, options.ChangeStream().SetFullDocument(options.Required))
		if _, err := plain.ReplaceOne(ctx, bson.M{"_id": 1}, bson.M{"b": 1}); err != nil {
			t.Fatal(err)
		}
		ev := nextEvent(t, cs)
		if fd := csDoc(t, ev, "fullDocument"); ev["operationType"] != "replace" || fd["b"] != int32(1) {
			t.Fatalf("replace event: %v", ev)
		}
	})
}

// TestChangeStreamImagesByCollMod: collMod changeStreamPreAndPostImages
// turns images on from then on: an update before it has none, one after
// it has both (whenAvailable and required), and turning them off stops
// them again (required then fails with 47).
func TestChangeStreamImagesByCollMod(t *testing.T) {
	db, coll := startCollection(t, "shop", "items")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "a": 1}); err != nil {
		t.Fatal(err)
	}
	cs := csWatch(t, coll, nil, options.ChangeStream().
		SetFullDocument(options.WhenAvailable).SetFullDocumentBeforeChange(options.WhenAvailable))
	update := func(a int) {
		t.Helper()
		if _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"a": a}}); err != nil {
			t.Fatal(err)
		}
	}
	images := func(on bool) {
		t.Helper()
		mustRun(t, db, bson.D{{Key: "collMod", Value: "items"}, {Key: "changeStreamPreAndPostImages", Value: bson.M{"enabled": on}}})
	}
	update(2)
	images(true)
	required := csWatch(t, coll, nil, options.ChangeStream().
		SetFullDocument(options.Required).SetFullDocumentBeforeChange(options.Required))
	update(3)
	// required: the update made with images has them (read before the
	// next, whose error would fail the getMore returning both, as mongod's
	// does), the one after collMod turned them off fails the stream.
	ev := nextEvent(t, required)
	if pre, post := csDoc(t, ev, "fullDocumentBeforeChange"), csDoc(t, ev, "fullDocument"); pre["a"] != int32(2) || post["a"] != int32(3) {
		t.Fatalf("required, with images: %v", ev)
	}
	images(false)
	update(4)
	wantStreamErr(t, csErr(t, required), 47, "ResumableChangeStreamError", false)
	evs := csEvents(t, cs, 3)
	want := []struct{ pre, post any }{{nil, nil}, {int32(2), int32(3)}, {nil, nil}}
	for i, ev := range evs {
		pre, post := csDoc(t, ev, "fullDocumentBeforeChange"), csDoc(t, ev, "fullDocument")
		if pre == nil || post == nil {
			t.Fatalf("event %d lacks an image field under whenAvailable: %v", i, ev)
		}
		if want[i].pre == nil {
			if pre["null"] != true || post["null"] != true {
				t.Fatalf("event %d: images without changeStreamPreAndPostImages: %v", i, ev)
			}
			continue
		}
		if pre["a"] != want[i].pre || post["a"] != want[i].post {
			t.Fatalf("event %d: pre %v post %v, want a %v and %v", i, pre, post, want[i].pre, want[i].post)
		}
	}
}

// TestChangeStreamFullDocumentBeforeChange: fullDocumentBeforeChange on
// update, replace and delete: off leaves the field out, whenAvailable
// gives the pre-image or null, required gives it or fails with 47; an
// insert never has the field.
func TestChangeStreamFullDocumentBeforeChange(t *testing.T) {
	db, _ := startCollection(t, "shop", "items")
	if err := db.CreateCollection(ctx, "imaged", withImages()); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	// writes makes an insert, an update, a replace and a delete of one
	// document: a 1 after the insert, 2 after the update, b 1 after the
	// replace.
	writes := func(c *mongo.Collection, id int) {
		t.Helper()
		_, err := c.InsertOne(ctx, bson.M{"_id": id, "a": 1})
		if err == nil {
			_, err = c.UpdateOne(ctx, bson.M{"_id": id}, bson.M{"$set": bson.M{"a": 2}})
		}
		if err == nil {
			_, err = c.ReplaceOne(ctx, bson.M{"_id": id}, bson.M{"b": 1})
		}
		if err == nil {
			_, err = c.DeleteOne(ctx, bson.M{"_id": id})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ops := []string{"insert", "update", "replace", "delete"}
	check := func(t *testing.T, evs []bson.M, want []bson.M) {
		t.Helper()
		for i, ev := range evs {
			if ev["operationType"] != ops[i] {
				t.Fatalf("event %d is %v, want %s", i, ev["operationType"], ops[i])
			}
			got := csDoc(t, ev, "fullDocumentBeforeChange")
			if want[i] == nil && got != nil || want[i] != nil && got == nil {
				t.Fatalf("%s event: fullDocumentBeforeChange %v, want %v: %v", ops[i], got, want[i], ev)
			}
			for k, v := range want[i] {
				if got[k] != v {
					t.Fatalf("%s event: fullDocumentBeforeChange %v, want %v", ops[i], got, want[i])
				}
			}
		}
	}
	pre := []bson.M{nil, {"_id": int32(1), "a": int32(1)}, {"a": int32(2)}, {"b": int32(1)}}
	null := bson.M{"null": true}
	for _, tc := range []struct {
		mode string
		coll string
		want []bson.M
	}{
		{"off", "imaged", []bson.M{nil, nil, nil, nil}},
		{"off", "plain", []bson.M{nil, nil, nil, nil}},
		{"whenAvailable", "imaged", pre},
		{"whenAvailable", "plain", []bson.M{nil, null, null, null}},
		{"required", "imaged", pre},
	} {
		t.Run(tc.mode+"/"+tc.coll, func(t *testing.T) {
			c := db.Collection(tc.coll)
			cs := csWatch(t, c, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.FullDocument(tc.mode)))
			writes(c, 1)
			check(t, csEvents(t, cs, 4), tc.want)
		})
	}

	t.Run("required/plain", func(t *testing.T) {
		c := db.Collection("plain")
		for _, op := range []string{"update", "replace", "delete"} {
			if _, err := c.InsertOne(ctx, bson.M{"_id": op, "a": 1}); err != nil {
				t.Fatal(err)
			}
			cs := csWatch(t, c, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.Required))
			var err error
			switch op {
			case "update":
				_, err = c.UpdateOne(ctx, bson.M{"_id": op}, bson.M{"$set": bson.M{"a": 2}})
			case "replace":
				_, err = c.ReplaceOne(ctx, bson.M{"_id": op}, bson.M{"b": 1})
			case "delete":
				_, err = c.DeleteOne(ctx, bson.M{"_id": op})
			}
			if err != nil {
				t.Fatal(err)
			}
			ce := csErr(t, cs)
			wantStreamErr(t, ce, 47, "ResumableChangeStreamError", false)
		}
	})
}

// csRawStream is a change stream run by hand: an aggregate and getMores,
// for what the driver does not let a test see or send.
type csRawStream struct {
	t    *testing.T
	db   *mongo.Database
	sc   context.Context // the session the stream was opened in
	coll string          // "": a database or cluster stream (aggregate: 1)
	id   int64
	pbrt bson.Raw // the last batch's postBatchResumeToken
}

type csCursorReply struct {
	Cursor struct {
		ID         int64      `bson:"id"`
		FirstBatch []bson.Raw `bson:"firstBatch"`
		NextBatch  []bson.Raw `bson:"nextBatch"`
		PBRT       bson.Raw   `bson:"postBatchResumeToken"`
	} `bson:"cursor"`
}

// csAggregate runs {aggregate: coll (or 1), pipeline, cursor: {}}.
func csAggregate(db *mongo.Database, coll string, pipeline bson.A) (csCursorReply, error) {
	return csAggregateIn(ctx, db, coll, pipeline)
}

// csAggregateIn is csAggregate under c.
func csAggregateIn(c context.Context, db *mongo.Database, coll string, pipeline bson.A) (csCursorReply, error) {
	var target any = coll
	if coll == "" {
		target = 1
	}
	var out csCursorReply
	err := db.RunCommand(c, bson.D{{Key: "aggregate", Value: target}, {Key: "pipeline", Value: pipeline},
		{Key: "cursor", Value: bson.D{}}}).Decode(&out)
	return out, err
}

// csOpenRaw opens a stream whose $changeStream stage is stage and returns
// it with its first batch.
func csOpenRaw(t *testing.T, db *mongo.Database, coll string, stage bson.D) (*csRawStream, []bson.M) {
	t.Helper()
	sc := oneSession(t, db) // the stream's getMores must come from its session
	out, err := csAggregateIn(sc, db, coll, bson.A{bson.D{{Key: "$changeStream", Value: stage}}})
	if err != nil {
		t.Fatalf("aggregate $changeStream %v: %v", stage, err)
	}
	s := &csRawStream{t: t, db: db, sc: sc, coll: coll, id: out.Cursor.ID, pbrt: out.Cursor.PBRT}
	if s.pbrt == nil {
		t.Fatalf("the aggregate's reply has no postBatchResumeToken: %+v", out)
	}
	if s.id != 0 {
		t.Cleanup(func() {
			s.db.RunCommand(s.sc, bson.D{{Key: "killCursors", Value: s.collName()}, {Key: "cursors", Value: bson.A{s.id}}})
		})
	}
	return s, csDecodeAll(t, out.Cursor.FirstBatch)
}

func (s *csRawStream) collName() string {
	if s.coll == "" {
		return "$cmd.aggregate"
	}
	return s.coll
}

func csDecodeAll(t *testing.T, raws []bson.Raw) []bson.M {
	t.Helper()
	out := make([]bson.M, 0, len(raws))
	for _, r := range raws {
		var m bson.M
		if err := bson.Unmarshal(r, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// getMore runs one getMore waiting up to wait and returns its batch.
func (s *csRawStream) getMore(wait time.Duration) []bson.M {
	s.t.Helper()
	var out csCursorReply
	err := s.db.RunCommand(s.sc, bson.D{{Key: "getMore", Value: s.id}, {Key: "collection", Value: s.collName()},
		{Key: "maxTimeMS", Value: wait.Milliseconds()}}).Decode(&out)
	if err != nil {
		s.t.Fatalf("getMore: %v", err)
	}
	if out.Cursor.PBRT == nil {
		s.t.Fatalf("a getMore reply without postBatchResumeToken: %+v", out)
	}
	s.pbrt = out.Cursor.PBRT
	return csDecodeAll(s.t, out.Cursor.NextBatch)
}

// next reads events until it has n, failing after a while.
func (s *csRawStream) next(n int) []bson.M {
	s.t.Helper()
	var evs []bson.M
	for i := 0; i < 50 && len(evs) < n; i++ {
		evs = append(evs, s.getMore(csAwait)...)
	}
	if len(evs) != n {
		s.t.Fatalf("got %d events, want %d: %v", len(evs), n, evs)
	}
	return evs
}

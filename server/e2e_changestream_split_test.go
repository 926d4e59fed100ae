package server_test

import (
	"bytes"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamSplitLargeEvent: a replace of a 9 MiB document by
// another, seen with its pre-image and the looked-up post-image, is an
// event of about 18 MiB. Without $changeStreamSplitLargeEvent the stream
// fails with BSONObjectTooLarge; with it the event comes as fragments,
// each under the limit with its own token and splitEvent, which together
// hold every field once; a stream resumed after the first fragment
// returns the second, then the events after it.
func TestChangeStreamSplitLargeEvent(t *testing.T) {
	db, coll := startCollection(t, "big", "docs")
	mustRun(t, db, bson.D{{Key: "create", Value: "docs"}, {Key: "changeStreamPreAndPostImages", Value: bson.M{"enabled": true}}})
	nine := strings.Repeat("x", 9<<20)
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 1, "s": nine}); err != nil {
		t.Fatal(err)
	}
	opts := func() *options.ChangeStreamOptionsBuilder {
		return options.ChangeStream().SetFullDocument(options.UpdateLookup).SetFullDocumentBeforeChange(options.WhenAvailable)
	}
	plain := csWatch(t, coll, nil, opts())
	split := csWatch(t, coll, mongo.Pipeline{{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{}}}}, opts())
	if _, err := coll.ReplaceOne(ctx, bson.M{"_id": 1}, bson.M{"s": strings.ToUpper(nine)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}

	if plain.Next(ctx) || plain.Err() == nil || !strings.Contains(plain.Err().Error(), "BSONObj size") {
		t.Fatalf("without the stage: next %v, want BSONObjectTooLarge", plain.Err())
	}
	frags := csEvents(t, split, 2)
	fields := map[string]int{}
	for i, f := range frags {
		if get(f, "splitEvent", "fragment") != int32(i+1) || get(f, "splitEvent", "of") != int32(2) {
			t.Fatalf("fragment %d: splitEvent %v", i, f["splitEvent"])
		}
		if raw, _ := bson.Marshal(f); len(raw) > 16<<20 {
			t.Fatalf("fragment %d is %d bytes", i, len(raw))
		}
		for k := range f {
			fields[k]++
		}
	}
	for _, k := range []string{"operationType", "documentKey", "ns", "fullDocument", "fullDocumentBeforeChange"} {
		if fields[k] != 1 {
			t.Errorf("field %s is in %d fragments, want 1", k, fields[k])
		}
	}
	if bytes.Equal(csToken(t, frags[0]), csToken(t, frags[1])) {
		t.Fatal("two fragments share a token")
	}
	if ev := nextEvent(t, split); ev["operationType"] != "insert" {
		t.Fatalf("after the fragments: %v", ev)
	}

	resumed := csWatch(t, coll, mongo.Pipeline{{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{}}}},
		opts().SetResumeAfter(csToken(t, frags[0])))
	if ev := nextEvent(t, resumed); !bytes.Equal(csToken(t, ev), csToken(t, frags[1])) {
		t.Fatalf("resumed after fragment 1: got %v", ev["splitEvent"])
	}
	if ev := nextEvent(t, resumed); ev["operationType"] != "insert" {
		t.Fatalf("resumed: after the last fragment %v", ev)
	}
	_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(csToken(t, frags[0])))
	if !isCode(err, 280) {
		t.Fatalf("resuming from a fragment without the stage: %v, want ChangeStreamFatalError", err)
	}
}

// TestChangeStreamSplitStageRefusals: the stage takes {} only, only last,
// and only in a $changeStream pipeline, with mongod's codes.
func TestChangeStreamSplitStageRefusals(t *testing.T) {
	_, coll := startCollection(t, "big", "docs")
	split := bson.D{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{}}}
	for _, c := range []struct {
		pipeline mongo.Pipeline
		code     int
	}{
		{mongo.Pipeline{{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{{Key: "a", Value: 1}}}}}, 7182800},
		{mongo.Pipeline{split, {{Key: "$match", Value: bson.D{}}}}, 7182802},
	} {
		if _, err := coll.Watch(ctx, c.pipeline); !isCode(err, c.code) {
			t.Errorf("watch %v: %v, want code %d", c.pipeline, err, c.code)
		}
	}
	_, err := coll.Aggregate(ctx, mongo.Pipeline{split})
	if !isCode(err, 20) || !strings.Contains(err.Error(), "can only be used in a $changeStream pipeline") {
		t.Errorf("outside a change stream: %v, want IllegalOperation", err)
	}
}

package server_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// blameOf runs dumboBlame and maps each path to its commit's message.
func blameOf(t *testing.T, db *mongo.Database, id any, rev string) map[string]string {
	t.Helper()
	cmd := bson.D{{Key: "dumboBlame", Value: 1}, {Key: "collection", Value: "docs"}, {Key: "_id", Value: id}}
	if rev != "" {
		cmd = append(cmd, bson.E{Key: "rev", Value: rev})
	}
	res := mustRun(t, db, cmd)
	out := map[string]string{}
	for _, f := range res["fields"].(bson.A) {
		out[fmt.Sprint(get(f, "path"))] = fmt.Sprint(get(f, "message"))
	}
	return out
}

// TestDumboBlameAgainstHistory: random edits of one document over a line
// of commits (fields set, changed back, removed, nested and in arrays, the
// document deleted and re-created); after each commit the blame of every
// path is checked against a brute-force walk of the versions kept by the
// test: the newest commit whose version differs at that path from the
// one before it.
func TestDumboBlameAgainstHistory(t *testing.T) {
	ts := startServer(t)
	db := ts.client().Database("blame")
	coll := db.Collection("docs")
	rng := rand.New(rand.NewPCG(7, 11))
	var versions []map[string]any // flattened, one per commit (nil: no document)
	var messages []string
	doc := bson.M{"_id": 1, "a": 1}
	for i := range 40 {
		switch op := rng.IntN(10); {
		case op == 0 && doc != nil:
			doc = nil
		case doc == nil:
			doc = bson.M{"_id": 1, "a": rng.IntN(3)}
		default:
			field := []string{"a", "b", "n"}[rng.IntN(3)]
			switch rng.IntN(4) {
			case 0:
				delete(doc, field)
			case 1:
				doc[field] = bson.M{"x": rng.IntN(3), "y": "s"}
			case 2:
				doc[field] = bson.A{rng.IntN(2), rng.IntN(2)}
			default:
				doc[field] = rng.IntN(3)
			}
		}
		if _, err := coll.DeleteOne(ctx, bson.M{"_id": 1}); err != nil {
			t.Fatal(err)
		}
		if doc != nil {
			if _, err := coll.InsertOne(ctx, doc); err != nil {
				t.Fatal(err)
			}
		}
		msg := fmt.Sprintf("c%d", i)
		if _, err := db.RunCommand(ctx, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}}).Raw(); err != nil {
			if isCode(err, 20003) { // nothing to commit: the edit changed nothing
				continue
			}
			t.Fatal(err)
		}
		var flat map[string]any
		if doc != nil {
			raw, _ := bson.Marshal(doc)
			flat = flatten(bson.Raw(raw), "")
		}
		versions, messages = append(versions, flat), append(messages, msg)
		if doc == nil {
			continue
		}
		got := blameOf(t, db, 1, "")
		for path := range flat {
			want := ""
			for k := len(versions) - 1; k >= 0; k-- {
				if k == 0 || versions[k-1] == nil || fmt.Sprint(versions[k-1][path]) != fmt.Sprint(versions[k][path]) || !has(versions[k-1], path) {
					want = messages[k]
					break
				}
			}
			if got[path] != want {
				t.Fatalf("after %s, %s is blamed on %s, want %s (blame %v)", msg, path, got[path], want, got)
			}
		}
		if len(got) != len(flat) {
			t.Fatalf("after %s: blame has %d paths, the document %d", msg, len(got), len(flat))
		}
	}
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// flatten maps a document's leaf paths to their values.
func flatten(doc bson.Raw, prefix string) map[string]any {
	out := map[string]any{}
	els, _ := doc.Elements()
	for _, el := range els {
		path := el.Key()
		if prefix != "" {
			path = prefix + "." + path
		}
		v := el.Value()
		switch v.Type {
		case bson.TypeEmbeddedDocument, bson.TypeArray:
			sub := flatten(v.Value, path)
			if len(sub) == 0 {
				out[path] = v.String()
			}
			for k, x := range sub {
				out[k] = x
			}
		default:
			out[path] = v.String()
		}
	}
	return out
}

// TestDumboBlameThroughMerge: a field set on a branch and merged is blamed
// on the branch's commit, not on the merge.
func TestDumboBlameThroughMerge(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("blamem")
	commit := func(db *mongo.Database, msg string) {
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: msg}})
	}
	if _, err := db.Collection("docs").InsertOne(ctx, bson.M{"_id": "d", "a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	commit(db, "base")
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "topic"}})
	topic := c.Database("blamem@topic")
	if _, err := topic.Collection("docs").UpdateOne(ctx, bson.M{"_id": "d"}, bson.M{"$set": bson.M{"b": 2}}); err != nil {
		t.Fatal(err)
	}
	commit(topic, "topic sets b")
	if _, err := db.Collection("docs").UpdateOne(ctx, bson.M{"_id": "d"}, bson.M{"$set": bson.M{"a": 2}}); err != nil {
		t.Fatal(err)
	}
	commit(db, "main sets a")
	mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "topic"}})
	got := blameOf(t, db, "d", "")
	if got["_id"] != "base" || got["a"] != "main sets a" || got["b"] != "topic sets b" {
		t.Fatalf("blame after the merge: %v", got)
	}
	if got := blameOf(t, db, "d", "main~1"); got["b"] != "base" {
		t.Fatalf("blame at main~1: %v", got)
	}
	_, err := db.RunCommand(ctx, bson.D{{Key: "dumboBlame", Value: 1}, {Key: "collection", Value: "docs"}, {Key: "_id", Value: "none"}}).Raw()
	if !isCode(err, 4) {
		t.Fatalf("blame of a missing document: %v, want NoSuchKey", err)
	}
}

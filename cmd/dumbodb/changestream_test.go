package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
)

// Process-level change stream tests: a stream resumed with its last token
// after the server was killed (SIGKILL) or stopped (SIGTERM) and restarted
// on the same data directory sees exactly the writes that exist, and an
// application on the Node driver keeps a correct copy of a collection from
// its stream while concurrent writers and merges of branches change it.
//
// None of them asserts a duration: every wait is for a condition, bounded
// by a generous limit that only a hung server reaches.

// csWait is how long a test waits for a condition (a stream catching up,
// a writer finishing) before it gives up.
const csWait = 3 * time.Minute

// majorityClient connects to p with w: majority (the default on a replica
// set, written out) and no client-side timeout: the stream's own awaits
// and the contexts bound each operation.
func majorityClient(t *testing.T, p *dumboproc.Proc) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetWriteConcern(writeconcern.Majority()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// disconnect closes a client whose server may be gone, without waiting
// long for it.
func disconnect(c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Disconnect(ctx)
}

// streamEvent is the part of a change event the tests look at.
type streamEvent struct {
	Token bson.Raw       `bson:"_id"`
	Op    string         `bson:"operationType"`
	At    bson.Timestamp `bson:"-"`
	Key   struct {
		ID any `bson:"_id"`
	} `bson:"documentKey"`
}

func decodeEvent(t *testing.T, cs *mongo.ChangeStream) streamEvent {
	t.Helper()
	var ev streamEvent
	if err := bson.Unmarshal(cs.Current, &ev); err != nil {
		t.Errorf("decoding change event %v: %v", cs.Current, err)
	}
	if sec, inc, ok := cs.Current.Lookup("clusterTime").TimestampOK(); ok {
		ev.At = bson.Timestamp{T: sec, I: inc}
	}
	return ev
}

// consumed is what a consumer goroutine saw of one server's life.
type consumed struct {
	ids    []int32
	tokens []bson.Raw
	err    error // an error before the server was stopped
}

// written is what a writer goroutine did during one server's life.
type written struct {
	acked   []int32
	unacked []int32 // a write whose answer never came: it may or may not exist
	next    int32   // the next _id to write
	err     error   // an error before the server was stopped
}

// TestChangeStreamResumeAfterKill9: a writer inserts {_id: i} one at a
// time with w: majority while a consumer watches the collection. The
// server is killed with SIGKILL mid-stream twice (the consumer caught up
// the first time, far behind the second) and restarted on the same data
// directory; the consumer resumes each time with resumeAfter its last
// event's token, the writer goes on with the next _id (the write whose
// answer the kill cut off is not retried). In the end the
// consumer has seen exactly the documents the collection holds, in
// insertion order, none twice, every acknowledged write among them.
func TestChangeStreamResumeAfterKill9(t *testing.T) {
	streamAcrossRestarts(t, func(t *testing.T, p *dumboproc.Proc) { p.Kill() })
}

// TestChangeStreamResumeAfterCleanRestart is the same with SIGTERM: the
// server shuts down cleanly while the writer and the stream are busy.
func TestChangeStreamResumeAfterCleanRestart(t *testing.T) {
	streamAcrossRestarts(t, func(t *testing.T, p *dumboproc.Proc) {
		if code := p.StopT(t, syscall.SIGTERM); code != 0 {
			t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.Output())
		}
	})
}

func streamAcrossRestarts(t *testing.T, stop func(*testing.T, *dumboproc.Proc)) {
	const (
		perLife  = 300 // acknowledged writes before each stop, and after the last start
		restarts = 2
	)
	dir := t.TempDir()
	var (
		seen    consumed // over all lives
		w       written
		outputs []string // each life's server log, for failures
	)
	for life := 0; life <= restarts; life++ {
		final := life == restarts
		p := dumboproc.StartT(t, dir)
		c := majorityClient(t, p)
		coll := c.Database("app").Collection("log")
		ctx, cancel := context.WithCancel(context.Background())
		var stopped atomic.Bool // set before the server is stopped: errors after it are expected

		opts := options.ChangeStream()
		var resume bson.Raw
		if n := len(seen.tokens); n > 0 {
			resume = seen.tokens[n-1]
			opts.SetResumeAfter(resume)
		} else if life > 0 {
			t.Fatalf("the consumer saw no event before the first stop")
		}
		cs, err := coll.Watch(ctx, mongo.Pipeline{}, opts)
		if err != nil {
			t.Fatalf("life %d: watch (resumeAfter %v): %v\n%s", life, resume, err, p.Output())
		}

		// The consumer records every event until the context ends or,
		// in the last life, until it has seen target.
		var target atomic.Int64
		target.Store(-1)
		var nSeen, nAcked atomic.Int64
		consumerDone := make(chan consumed, 1)
		go func() {
			var r consumed
			defer func() { cs.Close(context.Background()); consumerDone <- r }()
			for {
				if cs.TryNext(ctx) {
					var ev struct {
						Token bson.Raw `bson:"_id"`
						Op    string   `bson:"operationType"`
						Key   struct {
							ID int32 `bson:"_id"`
						} `bson:"documentKey"`
					}
					if err := bson.Unmarshal(cs.Current, &ev); err != nil || ev.Op != "insert" {
						r.err = fmt.Errorf("unexpected event %v (%v)", cs.Current, err)
						return
					}
					r.ids = append(r.ids, ev.Key.ID)
					r.tokens = append(r.tokens, ev.Token)
					nSeen.Add(1)
					if int64(ev.Key.ID) == target.Load() {
						return
					}
					if life%2 == 1 && !final {
						// A slow consumer: far behind the writer when
						// the server stops (in the other lives it keeps
						// up, and resumes at the log's end).
						time.Sleep(2 * time.Millisecond)
					}
					continue
				}
				if err := cs.Err(); err != nil || ctx.Err() != nil {
					if !stopped.Load() && ctx.Err() == nil {
						r.err = fmt.Errorf("stream: %w", err)
					}
					return
				}
				if n := len(r.ids); n > 0 && int64(r.ids[n-1]) == target.Load() {
					return
				}
			}
		}()

		// The writer inserts the next _id until the server is stopped
		// or, in the last life, perLife writes later.
		writerDone := make(chan written, 1)
		go func(w written) {
			defer func() { writerDone <- w }()
			last := w.next + perLife
			for ; !final || w.next < last; w.next++ {
				if ctx.Err() != nil {
					return
				}
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: w.next}}); err != nil {
					if !stopped.Load() {
						w.err = fmt.Errorf("insert %d: %w", w.next, err)
						return
					}
					w.unacked = append(w.unacked, w.next)
					w.next++
					return
				}
				w.acked = append(w.acked, w.next)
				nAcked.Add(1)
			}
		}(written{next: w.next})

		var lifeSeen consumed
		var lifeW written
		if !final {
			// Stop the server while both are busy: after perLife writes
			// and once the consumer has seen some of them.
			deadline := time.Now().Add(csWait)
			for nAcked.Load() < perLife || nSeen.Load() < perLife/3 {
				if time.Now().After(deadline) {
					stopped.Store(true)
					cancel()
					t.Fatalf("life %d: %d writes acknowledged and %d events seen after %v\n%s", life, nAcked.Load(), nSeen.Load(), csWait, p.Output())
				}
				time.Sleep(5 * time.Millisecond)
			}
			stopped.Store(true)
			stop(t, p)
			cancel() // the driver would otherwise try the dead address until it times out
			lifeW, lifeSeen = <-writerDone, <-consumerDone
		} else {
			select {
			case lifeW = <-writerDone:
			case <-time.After(csWait):
				cancel()
				t.Fatalf("the writer did not finish within %v\n%s", csWait, p.Output())
			}
			if lifeW.err == nil {
				// The consumer goes on until it has seen the last document.
				var ids []int32
				if ids, err = collectionIDs(coll); err != nil || len(ids) == 0 {
					cancel()
					t.Fatalf("the collection's documents: %v, %v", ids, err)
				}
				target.Store(int64(ids[len(ids)-1]))
			} else {
				cancel()
			}
			select {
			case lifeSeen = <-consumerDone:
			case <-time.After(csWait):
				cancel()
				lifeSeen = <-consumerDone
				lifeSeen.err = cmpOr(lifeSeen.err, fmt.Errorf("the stream did not reach _id %d within %v", target.Load(), csWait))
			}
			cancel()
		}
		outputs = append(outputs, p.Output())
		if lifeW.err != nil || lifeSeen.err != nil {
			t.Fatalf("life %d: writer: %v; consumer: %v\n%s", life, lifeW.err, lifeSeen.err, p.Output())
		}
		t.Logf("life %d: %d writes acknowledged, %v unacknowledged, %d events seen (to _id %v)", life, len(lifeW.acked), lifeW.unacked, len(lifeSeen.ids), window(lifeSeen.ids, len(lifeSeen.ids)))
		w.acked = append(w.acked, lifeW.acked...)
		w.unacked = append(w.unacked, lifeW.unacked...)
		w.next = lifeW.next
		seen.ids = append(seen.ids, lifeSeen.ids...)
		seen.tokens = append(seen.tokens, lifeSeen.tokens...)
		if final {
			exist, err := collectionIDs(coll)
			if err != nil {
				t.Fatal(err)
			}
			checkStreamMatches(t, exist, seen.ids, w)
			if t.Failed() {
				t.Logf("server logs:\n%s", strings.Join(outputs, "\n--- restart ---\n"))
			}
		}
		disconnect(c)
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// collectionIDs is the collection's _ids in ascending order.
func collectionIDs(coll *mongo.Collection) ([]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	ids := make([]int32, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}

// checkStreamMatches: the stream's _ids are the collection's, in order
// (the writer inserted ascending _ids one at a time), and the collection
// holds every acknowledged write and nothing that was not written.
func checkStreamMatches(t *testing.T, exist, seen []int32, w written) {
	t.Helper()
	have := map[int32]bool{}
	for _, id := range exist {
		have[id] = true
	}
	for _, id := range w.acked {
		if !have[id] {
			t.Errorf("acknowledged write %d is not in the collection", id)
		}
	}
	for _, id := range exist {
		if !slices.Contains(w.acked, id) && !slices.Contains(w.unacked, id) {
			t.Errorf("the collection holds %d, which was never written", id)
		}
	}
	if !slices.Equal(seen, exist) {
		i := 0
		for i < len(seen) && i < len(exist) && seen[i] == exist[i] {
			i++
		}
		t.Errorf("the stream saw %d events, the collection holds %d documents; first difference at %d: stream %v, collection %v",
			len(seen), len(exist), i, window(seen, i), window(exist, i))
		dup := map[int32]int{}
		for _, id := range seen {
			dup[id]++
		}
		for id, n := range dup {
			if n > 1 {
				t.Errorf("the stream saw %d %d times", id, n)
			}
		}
		for _, id := range exist {
			if dup[id] == 0 {
				t.Errorf("the stream never saw %d", id)
			}
		}
	}
	t.Logf("%d documents, %d acknowledged writes, unacknowledged %v", len(exist), len(w.acked), w.unacked)
}

// window is s around i, for messages.
func window(s []int32, i int) []int32 {
	return s[max(0, i-3):min(len(s), i+4)]
}

// TestChangeStreamSurvivesRestartTokens: tokens taken before a clean
// restart resume after it (an event's token with resumeAfter and
// startAfter, a postBatchResumeToken), startAtOperationTime from before
// the restart replays every event since, and tokens of a shape this server
// never hands out get an error.
func TestChangeStreamSurvivesRestartTokens(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	c := majorityClient(t, p)
	coll := c.Database("app").Collection("tok")
	ctx, cancel := context.WithTimeout(context.Background(), csWait)
	defer cancel()
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	for i := int32(1); i <= 3; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	var before []streamEvent
	for len(before) < 3 && cs.Next(ctx) {
		before = append(before, decodeEvent(t, cs))
	}
	if len(before) < 3 {
		t.Fatalf("events before the restart: %v, %v", before, cs.Err())
	}
	for i, ev := range before {
		if ev.Op != "insert" || ev.Key.ID != int32(i+1) {
			t.Fatalf("event %d before the restart: %+v", i, ev)
		}
	}
	// An empty batch's token is the stream's position (a high-water mark).
	if cs.TryNext(ctx) {
		t.Fatalf("an event nobody wrote: %v", cs.Current)
	}
	highWater := slices.Clone(cs.ResumeToken())
	if highWater == nil || bsonEqual(highWater, before[2].Token) {
		t.Fatalf("postBatchResumeToken of an empty batch: %v (the last event's: %v)", highWater, before[2].Token)
	}
	cs.Close(ctx)
	disconnect(c)
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.Output())
	}

	p = dumboproc.StartT(t, dir)
	c = majorityClient(t, p)
	defer disconnect(c)
	coll = c.Database("app").Collection("tok")
	for i := int32(4); i <= 5; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		opts *options.ChangeStreamOptionsBuilder
		want []int32
	}{
		{"resumeAfter the second event", options.ChangeStream().SetResumeAfter(before[1].Token), []int32{3, 4, 5}},
		{"startAfter the third event", options.ChangeStream().SetStartAfter(before[2].Token), []int32{4, 5}},
		{"resumeAfter the postBatchResumeToken", options.ChangeStream().SetResumeAfter(highWater), []int32{4, 5}},
		{"startAtOperationTime of the first event", options.ChangeStream().SetStartAtOperationTime(&before[0].At), []int32{1, 2, 3, 4, 5}},
	} {
		if got := watchIDs(t, ctx, coll, c.opts, 5); !slices.Equal(got, c.want) {
			t.Errorf("after the restart, %s: %v, want %v\n%s", c.name, got, c.want, p.Output())
		}
	}

	// A token the server did not make.
	hex := func(s string) bson.D { return bson.D{{Key: "_data", Value: s}} }
	ours := before[0].Token.Lookup("_data").StringValue()
	for _, c := range []struct {
		name  string
		token any
		code  int32
	}{
		{"not hex", hex("ZZ"), 9},
		{"empty", hex(""), 40649},
		{"too short", hex(ours[:20]), 50795},
		{"too long", hex(ours + "00"), 50795},
		{"another version byte", hex("83" + ours[2:]), 50795},
		{"an unknown kind", hex(ours[:len(ours)-2] + "07"), 50795},
		{"mongod's", hex("8265F0C1A2000000012B022C0100296E5A1004A1B2C3D4E5F60718293A4B5C6D7E8F9046645F6964006400000004"), 50795},
		{"_data not a string", bson.D{{Key: "_data", Value: 12}}, 40647},
		{"no _data", bson.D{{Key: "token", Value: "x"}}, 40647},
	} {
		cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(c.token))
		if err == nil {
			cs.Close(ctx)
			t.Errorf("resumeAfter %s token %v: no error", c.name, c.token)
			continue
		}
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorCode(int(c.code)) {
			t.Errorf("resumeAfter %s token %v: %v, want code %d", c.name, c.token, err, c.code)
		}
	}
	// A token of this server's shape from beyond the log's end.
	future := ours[:18] + "00000000FFFFFFFF" + ours[34:]
	if cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(hex(future))); err == nil {
		cs.Close(ctx)
		t.Errorf("resumeAfter a token past the end of the log (%s): no error", future)
	} else {
		t.Logf("a token past the end of the log: %v", err)
	}
}

// watchIDs opens a stream with opts and returns the documentKey._ids of
// its events up to and including last.
func watchIDs(t *testing.T, ctx context.Context, coll *mongo.Collection, opts *options.ChangeStreamOptionsBuilder, last int32) []int32 {
	t.Helper()
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, opts)
	if err != nil {
		t.Errorf("watch: %v", err)
		return nil
	}
	defer cs.Close(ctx)
	var ids []int32
	for len(ids) < 10 && cs.Next(ctx) {
		ev := decodeEvent(t, cs)
		id, _ := ev.Key.ID.(int32)
		ids = append(ids, id)
		if id == last {
			return ids
		}
	}
	t.Errorf("stream ended before _id %d: %v, %v", last, ids, cs.Err())
	return ids
}

func bsonEqual(a, b bson.Raw) bool { return string(a) == string(b) }

// TestChangeStreamNodeMirrorWithMerges: an application on the Node driver
// keeps a Map copy of a collection from its change stream (fullDocument:
// "updateLookup") while 8 writers insert, update, upsert, replace and
// delete on main and, meanwhile, branches are created, written to,
// committed and merged into main. The merges change main's documents, so
// the stream reports them as document events; once the stream has caught
// up (a sentinel insert's event arrived) the copy equals a find() on main.
func TestChangeStreamNodeMirrorWithMerges(t *testing.T) {
	node, driver := nodeDriver(t)
	p := dumboproc.StartT(t, t.TempDir())
	file := filepath.Join(t.TempDir(), "mirror.js")
	if err := os.WriteFile(file, []byte(mirrorScript), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, file, driver, fmt.Sprint(p.Port()))
	var out strings.Builder
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
	cmd.Stderr = cmd.Stdout
	err := cmd.Run()
	mu.Lock()
	got := out.String()
	mu.Unlock()
	if err != nil || !strings.HasPrefix(got, "ok ") {
		t.Fatalf("node: %v\n%s\nserver:\n%s", err, got, p.Output())
	}
	t.Logf("node: %s", got)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// mirrorScript is the Node application: argv[2] is the driver, argv[3]
// the port. It prints "ok ..." when the copy matches, "FAIL ..." else.
const mirrorScript = `
const { MongoClient, BSON } = require(process.argv[2]);
const { EJSON } = BSON;
const url = "mongodb://127.0.0.1:" + process.argv[3] + "/?directConnection=true";
const WRITERS = 8, OPS = 150, KEYS = 40, ROUNDS = 6, BRANCH_DOCS = 10;

function fail(msg) { console.log("FAIL " + msg); process.exit(1); }
const rnd = n => Math.floor(Math.random() * n);
const sleep = ms => new Promise(r => setTimeout(r, ms));
const show = v => EJSON.stringify(v, { relaxed: false });

(async () => {
  const client = new MongoClient(url, { maxPoolSize: 32 });
  await client.connect();
  const db = client.db("app"), coll = db.collection("c");
  await db.createCollection("c");
  await db.command({ dumboCommit: 1, message: "start" });

  // The application's copy, kept from the stream.
  const mirror = new Map();
  const ops = {};
  let events = 0, mergedEvents = 0;
  const stream = coll.watch([], { fullDocument: "updateLookup" });
  if (await stream.tryNext() !== null) fail("an event before any write");
  const consumer = (async () => {
    for (;;) {
      const ev = await stream.next();
      events++;
      ops[ev.operationType] = (ops[ev.operationType] || 0) + 1;
      const id = ev.documentKey && ev.documentKey._id;
      switch (ev.operationType) {
        case "insert": case "replace": mirror.set(id, ev.fullDocument); break;
        case "update":
          if (ev.fullDocument) mirror.set(id, ev.fullDocument); else mirror.delete(id); // gone since: its delete follows
          break;
        case "delete": mirror.delete(id); break;
        default: fail("unexpected event " + show(ev));
      }
      if (typeof id === "string" && id.startsWith("b")) mergedEvents++;
      if (id === "sentinel") return;
    }
  })().catch(e => fail("stream: " + e + "\n" + e.stack));

  // Writes to main take the gate shared; a merge takes it alone, since
  // main must have no uncommitted writes when it merges.
  let gate = null, inFlight = 0, drained = null;
  async function onMain(fn) {
    while (gate) await gate;
    inFlight++;
    try { return await fn(); } finally { if (--inFlight === 0 && drained) drained(); }
  }
  async function alone(fn) {
    while (gate) await gate;
    let open;
    gate = new Promise(r => { open = r; });
    if (inFlight > 0) await new Promise(r => { drained = r; });
    drained = null;
    try { return await fn(); } finally { gate = null; open(); }
  }
  async function commit(d, message) {
    try { await d.command({ dumboCommit: 1, message }); }
    catch (e) { if (e.codeName !== "NothingToCommit") throw e; }
  }

  let writes = 0, merging = true;
  async function writer(w) {
    for (let i = 0; i < OPS || merging; i++) { // at least OPS, and on while the merges go on
      const _id = "k" + rnd(KEYS), op = rnd(8);
      await onMain(async () => {
        try {
          switch (op) {
            case 0: await coll.insertOne({ _id, w, i, n: 0 }); break;
            case 1: await coll.updateOne({ _id }, { $inc: { n: 1 }, $set: { w, i } }); break;
            case 2: await coll.updateOne({ _id }, { $set: { w, i, up: true }, $unset: { r: "" } }, { upsert: true }); break;
            case 3: await coll.replaceOne({ _id }, { w, i, r: rnd(1000) }); break;
            case 4: await coll.deleteOne({ _id }); break;
            case 5: await coll.updateMany({ w }, { $inc: { m: 1 } }); break;
            case 6: await coll.findOneAndUpdate({ _id }, { $push: { h: i } }); break;
            case 7: await coll.findOneAndDelete({ _id, n: { $gte: 1 } }); break;
          }
          writes++;
        } catch (e) { if (e.code !== 11000) throw e; }
      });
    }
  }

  // Each round branches main, changes documents on the branch (new ones
  // and those earlier merges brought in), commits it and merges it into
  // main. In odd rounds the writers keep changing main meanwhile, so the
  // merge is a three-way one; even rounds do it all while main is still
  // (its head is the branch's base), so the merge is a fast-forward.
  const merges = [];
  async function onBranch(r) {
    const name = "feat" + r, bdb = client.db("app@" + name), bc = bdb.collection("c");
    await db.command({ dumboBranch: name });
    for (let k = 0; k < BRANCH_DOCS; k++) await bc.insertOne({ _id: "b" + r + "-" + k, r, k });
    if (r > 1) {
      const prev = "b" + (r - 1) + "-";
      await bc.updateMany({ _id: { $regex: "^" + prev } }, { $set: { r }, $inc: { seen: 1 } });
      await bc.deleteOne({ _id: prev + "0" });
      await bc.replaceOne({ _id: prev + "1" }, { replacedIn: r });
    }
    await commit(bdb, "round " + r);
  }
  async function merge(r) {
    const res = await db.command({ dumboMerge: 1, mergeIn: "feat" + r });
    merges.push(res.fastForward ? "ff" : "3way");
  }
  async function merger() {
    for (let r = 1; r <= ROUNDS; r++) {
      await sleep(100 + rnd(300));
      if (r % 2 === 1) {
        await onBranch(r);
        await sleep(rnd(300));
        await alone(async () => { await commit(db, "before merge " + r); await merge(r); });
      } else {
        await alone(async () => { await commit(db, "before branch " + r); await onBranch(r); await merge(r); });
      }
    }
  }

  const work = [merger().finally(() => { merging = false; })];
  for (let w = 0; w < WRITERS; w++) work.push(writer(w));
  await Promise.all(work);
  await coll.insertOne({ _id: "sentinel" });
  const timeout = setTimeout(() => fail("the stream did not reach the sentinel; " + events + " events, " + show(ops)), 180000);
  await consumer;
  clearTimeout(timeout);

  const docs = await coll.find().toArray();
  const bad = [];
  for (const d of docs) {
    if (!mirror.has(d._id)) bad.push("missing from the copy: " + show(d));
    else if (show(mirror.get(d._id)) !== show(d)) bad.push("copy " + show(mirror.get(d._id)) + " != find " + show(d));
  }
  const ids = new Set(docs.map(d => d._id));
  for (const [id, d] of mirror) if (!ids.has(id)) bad.push("in the copy, not on main: " + show(d));
  const merged = docs.filter(d => typeof d._id === "string" && d._id.startsWith("b")).length;
  if (!merges.includes("3way") || !merges.includes("ff")) bad.push("not both kinds of merge: " + show(merges));
  if (merged === 0 || mergedEvents === 0) bad.push("no merged documents on main (" + merged + ") or no events of them (" + mergedEvents + ")");
  const summary = docs.length + " docs, " + writes + " writes, " + events + " events " + show(ops) + ", " +
    mergedEvents + " from merges " + show(merges) + ", " + merged + " merged docs";
  if (bad.length) fail(bad.length + " differences; " + summary + "\n" + bad.slice(0, 20).join("\n"));
  console.log("ok " + summary);
  await stream.close();
  await client.close();
})().catch(e => fail("error " + e + "\n" + e.stack));
`

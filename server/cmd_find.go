package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// findArgs are the parsed arguments of find.
type findArgs struct {
	filter, sort, projection     bsoncore.Document
	collation, let               bsoncore.Document
	min, max                     bsoncore.Document // bounds on the hinted index's keys
	hint                         bsoncore.Value
	skip, limit, batchSize       int64
	singleBatch, noCursorTimeout bool
	returnKey, showRecordID      bool
	tailable, awaitData          bool
	explain                      bool // explain's find on a view (findOnView)
}

func (r *request) parseFindArgs(a *findArgs) error {
	err := parseTable(r.name, r.cmd, findFields, a)
	switch {
	case err != nil:
		return err
	case a.awaitData && !a.tailable:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	return nil
}

// findFields are find's fields (explain's find reads them too).
var findFields = declareArgs(map[string]argReader[findArgs]{
	"filter":              func(f argField, a *findArgs, v bsoncore.Value) error { return f.optDoc(v, &a.filter) },
	"sort":                func(f argField, a *findArgs, v bsoncore.Value) error { return findSort(f, v, &a.sort) },
	"projection":          func(f argField, a *findArgs, v bsoncore.Value) error { return f.optDoc(v, &a.projection) },
	"skip":                func(f argField, a *findArgs, v bsoncore.Value) error { return f.nonNegative(v, &a.skip) },
	"limit":               func(f argField, a *findArgs, v bsoncore.Value) error { return f.nonNegative(v, &a.limit) },
	"batchSize":           func(f argField, a *findArgs, v bsoncore.Value) error { return f.batchSize(v, &a.batchSize) },
	"singleBatch":         func(f argField, a *findArgs, v bsoncore.Value) error { return f.optionalBool(v, &a.singleBatch) },
	"noCursorTimeout":     func(f argField, a *findArgs, v bsoncore.Value) error { return f.optionalBool(v, &a.noCursorTimeout) },
	"hint":                func(f argField, a *findArgs, v bsoncore.Value) error { return f.hint(v, &a.hint) },
	"collation":           func(f argField, a *findArgs, v bsoncore.Value) error { return f.optDoc(v, &a.collation) },
	"let":                 func(f argField, a *findArgs, v bsoncore.Value) error { return f.optDoc(v, &a.let) },
	"returnKey":           func(f argField, a *findArgs, v bsoncore.Value) error { return f.optionalBool(v, &a.returnKey) },
	"showRecordId":        func(f argField, a *findArgs, v bsoncore.Value) error { return f.optionalBool(v, &a.showRecordID) },
	"tailable":            func(f argField, a *findArgs, v bsoncore.Value) error { return f.optionalBool(v, &a.tailable) },
	"awaitData":           func(f argField, a *findArgs, v bsoncore.Value) error { return f.optionalBool(v, &a.awaitData) },
	"min":                 func(f argField, a *findArgs, v bsoncore.Value) error { return f.optDoc(v, &a.min) },
	"max":                 func(f argField, a *findArgs, v bsoncore.Value) error { return f.optDoc(v, &a.max) },
	"allowDiskUse":        ignoredAs[findArgs]("bool"),
	"oplogReplay":         ignoredAs[findArgs]("bool"),
	"allowPartialResults": ignoredAs[findArgs]("bool"),
	"readOnce":            ignoredAs[findArgs]("bool"),
})

// findSort reads find's sort: a document (null: none), else mongod's own
// wording, its missing space included.
func findSort(f argField, v bsoncore.Value, dst *bsoncore.Document) error {
	if v.Type != bsoncore.TypeNull && v.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.TypeMismatch, "Expected field sortto be of type object")
	}
	return f.optDoc(v, dst)
}

// notCappedError: a tailable cursor needs a capped collection; mongod's
// answer on one that is not.
func notCappedError() error {
	return mongoerr.New(mongoerr.BadValue, "error processing query: tailable cursor requested on non capped collection")
}

func cmdFind(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	a := findArgs{batchSize: batchSizeAbsent}
	if err := r.parseFindArgs(&a); err != nil {
		return nil, err
	}
	r.c.s.stats.opQuery.Add(1)
	src, err := r.findSource(coll, &a)
	if err != nil {
		return nil, err
	}
	// A limit the first batch reaches closes the cursor through the plan,
	// which knows it reached it (plan/known_end.go), as mongod's does.
	return r.startCursor(r.ns(coll), src, int(a.batchSize), a.singleBatch, a.noCursorTimeout)
}

// findSource compiles a find and returns its result stream.
func (r *request) findSource(coll string, a *findArgs) (docSource, error) {
	snap, err := r.snapshot() // one snapshot for the view check and the read
	if err != nil {
		return nil, err
	}
	info, ok := snap.Collection(coll)
	if (ok && info.IsView()) || coll == "system.views" {
		if a.tailable {
			return nil, notCappedError()
		}
		return r.findOnView(coll, a)
	}
	switch {
	case a.tailable && !ok:
		// mongod plans a missing collection as empty before it checks
		// for tailable: an empty, closed cursor (so on local.oplog.rs).
		a.tailable, a.awaitData = false, false
	case a.tailable && !info.Capped():
		return nil, notCappedError()
	}
	collation := a.collation
	if collation == nil {
		collation = createdCollation(info, ok) // not collEnv: it takes a second snapshot
	}
	src, err := r.findCollection(snap, coll, a, collation)
	if err != nil || ok {
		return src, err
	}
	// mongod reads a collection that does not exist with a plan that knows
	// it has nothing, so that even batchSize: 0 closes the cursor.
	return knownEmpty{src}, nil
}

// findCollection runs a find on a collection that is no view.
func (r *request) findCollection(snap *storage.Snapshot, coll string, a *findArgs, collation bsoncore.Document) (docSource, error) {
	if id, ok := idHackID(a, collation); ok {
		ex, err := plan.Execute(r.ctx, snap, coll, &plan.Read{ID: id})
		return ex.Source, err
	}
	rd, err := r.findRead(a, collation, snap, coll)
	if err != nil {
		return nil, err
	}
	if a.tailable {
		return r.tailFind(coll, a, rd.Filter, rd.Projection, rd.Sort)
	}
	rd.RecordIDs = recordIDs(r.ctx, snap, coll)
	ex, err := plan.Execute(r.ctx, snap, coll, rd)
	if err != nil {
		return nil, err
	}
	return ex.Source, nil
}

// knownEmpty is the result of a find on a collection that does not exist.
type knownEmpty struct{ docSource }

func (knownEmpty) AtEnd() bool { return true }

func (s knownEmpty) Close() error {
	closeSource(s.docSource)
	return nil
}

// findRead compiles a find's arguments into the read it runs (explain's
// find too) on coll of snap, under the collation that applies.
func (r *request) findRead(a *findArgs, collation bsoncore.Document, snap storage.Reader, coll string) (*plan.Read, error) {
	env, err := r.queryEnv(collation, a.let)
	if err != nil {
		return nil, err
	}
	rd := &plan.Read{FilterDoc: a.filter, SortDoc: a.sort, ProjectionDoc: a.projection, Skip: a.skip, Limit: a.limit,
		Hint: a.hint, ReturnKey: a.returnKey, ShowRecordID: a.showRecordID}
	if rd.Filter, err = query.CompileQueryFilter(value.OrEmpty(a.filter), env); err != nil {
		return nil, err
	}
	if nonEmpty(a.projection) {
		opts := query.ProjectionOptions{Env: env, Query: rd.Filter}
		if rd.Projection, err = query.CompileProjectionOpts(a.projection, opts); err != nil {
			return nil, err
		}
	}
	if nonEmpty(a.sort) {
		if rd.Sort, err = query.CompileSortQuery(a.sort, env, rd.Filter); err != nil {
			return nil, err
		}
	}
	hint := a.hint
	if hint.Type == bsoncore.TypeString && (a.min != nil || a.max != nil) {
		// min and max bound the named index's key.
		if hint, err = plan.HintKeyPattern(snap, coll, hint); err != nil {
			return nil, err
		}
	}
	if rd.KeyRange, err = plan.ParseKeyRange(hint, a.min, a.max); err != nil {
		return nil, err
	}
	return rd, nil
}

var emptyDoc = bsoncore.NewDocumentBuilder().Build()

func cmdGetMore(r *request) (bsoncore.Document, error) {
	v := r.cmd.Index(0).Value()
	id, ok := v.Int64OK()
	if !ok {
		return nil, typeMismatch("getMore", "getMore", v, "long")
	}
	var coll string
	var batchSize int64
	given := false
	err := r.parseArgs(map[string]fieldHandler{
		"collection":               func(v bsoncore.Value) error { given = true; return r.field("collection").string(v, &coll) },
		"batchSize":                func(v bsoncore.Value) error { return r.field("batchSize").batchSize(v, &batchSize) },
		"term":                     r.ignoredArg("term", "long"),
		"lastKnownCommittedOpTime": r.ignoredArg("lastKnownCommittedOpTime", "object"),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !given:
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'getMore.collection' is missing but a required field")
	case coll == "":
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Collection names cannot be empty")
	}
	r.c.s.stats.opGetMore.Add(1)
	cur := r.c.s.cursors.get(id)
	if cur == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if err := r.checkCursorOwner(cur); err != nil {
		return nil, err
	}
	if cur.ns != r.ns(coll) {
		return nil, mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", r.ns(coll), cur.ns)
	}
	if err := r.getMoreFailure(cur); err != nil {
		r.c.s.cursors.remove(id) // mongod kills a cursor whose getMore failed
		if cur.stream != nil {
			return nil, labelStreamError(err)
		}
		return nil, err
	}
	if cur.stream != nil {
		return r.streamGetMoreReply(cur, int(batchSize))
	}
	if err := r.checkTailMaxTime(cur); err != nil {
		return nil, err
	}
	var docs []bsoncore.Document
	var done bool
	if t := cur.tail; t != nil {
		docs, done, err = r.tailGetMore(cur, t, int(batchSize))
	} else {
		docs, done, err = r.nextBatch(cur, int(batchSize))
	}
	if err != nil || done {
		r.c.s.cursors.remove(id)
		id = 0
	}
	if err != nil {
		return nil, err
	}
	return cursorReply(id, cur.ns, "nextBatch", docs, clusterTime{}), nil
}

// nextBatch reads a cursor's next batch, or says why it was killed.
func (r *request) nextBatch(cur *cursor, batchSize int) ([]bsoncore.Document, bool, error) {
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if cur.killed != nil {
		return nil, true, cur.killed
	}
	if cur.src == nil {
		return nil, true, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", cur.id)
	}
	r.c.s.cursors.moveOwner(cur, r.c.id)
	cur.lastUsed = time.Now()
	cur.reader.Store(&opRef{c: r.c, opid: r.c.currentOpID()})
	defer cur.reader.Store(nil)
	return fillBatch(r.ctx, cur.src, batchSize)
}

// cmdKillCursors kills cursors by id, as mongod does: whatever the
// namespace it names and the session it runs in, but only the user's
// own; naming another user's cursor refuses the whole command, killing
// none.
func cmdKillCursors(r *request) (bsoncore.Document, error) {
	if _, err := r.cursorCollectionArg(); err != nil {
		return nil, err
	}
	ids, err := r.killCursorsIDs()
	if err != nil {
		return nil, err
	}
	killed, notFound := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for _, id := range ids {
		if r.c.s.cursors.remove(id) {
			killed.AppendInt64(id)
		} else {
			notFound.AppendInt64(id)
		}
	}
	return bsoncore.NewDocumentBuilder().
		AppendArray("cursorsKilled", killed.Build()).
		AppendArray("cursorsNotFound", notFound.Build()).
		AppendArray("cursorsAlive", bsoncore.NewArrayBuilder().Build()).
		AppendArray("cursorsUnknown", bsoncore.NewArrayBuilder().Build()).
		AppendDouble("ok", 1).Build(), nil
}

// cursorCollectionArg reads killCursors' collection. mongod takes any
// valid namespace there, not only one a collection could have: drivers
// close the cursors of listCollections and of change streams on a
// database or the cluster under the namespaces those cursors report,
// <db>.$cmd.listCollections and <db>.$cmd.aggregate.
func (r *request) cursorCollectionArg() (string, error) {
	name, err := r.collectionName(mongoerr.InvalidNamespace)
	if err == nil && (name == "" || strings.ContainsRune(name, 0)) {
		err = validateCollectionName(r.db, name)
	}
	return name, err
}

// killCursorsIDs reads killCursors' cursor ids, refusing the command
// when one names a cursor another user opened (mongod's authorization
// check of the command, so its message).
func (r *request) killCursorsIDs() ([]int64, error) {
	var arr bsoncore.Array
	if err := r.parseArgs(map[string]fieldHandler{"cursors": r.arrayArg("cursors", &arr)}); err != nil {
		return nil, err
	}
	vals, _ := arr.Values()
	ids := make([]int64, 0, len(vals))
	for i, v := range vals {
		id, ok := v.Int64OK()
		if !ok {
			return nil, typeMismatch("killCursors", fmt.Sprintf("cursors.%d", i), v, "long")
		}
		if cur := r.c.s.cursors.get(id); cur != nil && !r.opened(cur) {
			return nil, r.notAuthorized()
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// nonEmpty reports whether d has at least one field (an empty BSON
// document is 5 bytes).
func nonEmpty(d bsoncore.Document) bool { return len(d) > 5 }

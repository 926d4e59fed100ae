package server

import (
	"context"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Change events as mongod 8 writes them (docs/design/change-streams.md),
// built from the change log's stored events.

// eventDoc builds the change event of a stored event.
func (cs *changeStream) eventDoc(ctx context.Context, e storage.ChangeEntry, ev storage.ChangeEvent, token resumeToken) (bsoncore.Document, error) {
	b := bsoncore.NewDocumentBuilder().
		AppendDocument("_id", token.doc()).
		AppendString("operationType", ev.Op).
		AppendTimestamp("clusterTime", token.at.t, token.at.i)
	if cs.args.expanded && ev.Coll != "" {
		b.AppendBinary("collectionUUID", 4, ev.UUID[:])
	}
	b.AppendDateTime("wallTime", e.Wall.UnixMilli())
	cs.s.metrics.streamLag.Observe(time.Since(e.Wall).Seconds())
	full, err := cs.fullDocument(ctx, e, ev)
	if err != nil {
		return nil, err
	}
	if full.Type != 0 {
		b.AppendValue("fullDocument", full)
	}
	b.AppendDocument("ns", cs.nsOf(e, ev.Coll))
	if ev.Key != nil {
		b.AppendDocument("documentKey", ev.Key)
	}
	switch ev.Op {
	case "update":
		b.AppendDocument("updateDescription", cs.updateDescription(ev.Update))
	case "rename":
		to := cs.nsOf(e, ev.To)
		b.AppendDocument("to", to)
		if cs.args.expanded {
			desc := bsoncore.NewDocumentBuilder().AppendDocument("to", to)
			if v, err := ev.Desc.LookupErr("dropTarget"); err == nil {
				desc.AppendValue("dropTarget", v)
			}
			b.AppendDocument("operationDescription", desc.Build())
		}
	case "create":
		b.AppendDocument("operationDescription", createDescription(ev.Desc))
	default:
		if ev.Desc != nil {
			b.AppendDocument("operationDescription", ev.Desc)
		}
		if ev.Before != nil {
			b.AppendDocument("stateBeforeChange", ev.Before)
		}
	}
	before, err := cs.beforeChange(e, ev)
	if err != nil {
		return nil, err
	}
	if before.Type != 0 {
		b.AppendValue("fullDocumentBeforeChange", before)
	}
	if e.Txn != nil {
		b.AppendDocument("lsid", bsoncore.NewDocumentBuilder().
			AppendBinary("id", 4, e.Txn.Session.ID[:]).
			AppendBinary("uid", 0, e.Txn.Session.UID[:]).Build())
		b.AppendInt64("txnNumber", e.Txn.Number)
	}
	return b.Build(), nil
}

// updateDescription is the stored one, without disambiguatedPaths unless
// the stream shows expanded events (as mongod 6.1+).
func (cs *changeStream) updateDescription(u bsoncore.Document) bsoncore.Document {
	if cs.args.expanded {
		return u
	}
	b := bsoncore.NewDocumentBuilder()
	els, _ := u.Elements()
	for _, el := range els {
		if el.Key() != "disambiguatedPaths" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// nsOf is an event's ns: {db, coll}, or {db} for database events.
func (cs *changeStream) nsOf(e storage.ChangeEntry, coll string) bsoncore.Document {
	db := e.DB
	if !cs.scope.cluster {
		db = cs.scope.nsDB
	}
	b := bsoncore.NewDocumentBuilder().AppendString("db", db)
	if coll != "" {
		b.AppendString("coll", coll)
	}
	return b.Build()
}

// createDescription is a create event's operationDescription: the _id
// index and the options the collection was created with.
func createDescription(options bsoncore.Document) bsoncore.Document {
	if _, isView := options.Lookup("viewOn").StringValueOK(); isView {
		return options // a view's: {viewOn, pipeline}, as mongod reports it
	}
	idIndex := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendString("name", "_id_").Build()
	b := bsoncore.NewDocumentBuilder().AppendDocument("idIndex", idIndex)
	els, _ := options.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

var nullValue = bsoncore.Value{Type: bsoncore.TypeNull}

// fullDocument is an event's fullDocument (zero Value: the field is left
// out).
func (cs *changeStream) fullDocument(ctx context.Context, e storage.ChangeEntry, ev storage.ChangeEvent) (bsoncore.Value, error) {
	switch ev.Op {
	case "insert", "replace":
		return value.DocValue(ev.Doc), nil
	case "update":
	default:
		return bsoncore.Value{}, nil
	}
	switch cs.args.fullDocument {
	case "updateLookup":
		return cs.lookup(ctx, e, ev)
	case "whenAvailable", "required":
		if ev.Doc != nil {
			return value.DocValue(ev.Doc), nil
		}
		if cs.args.fullDocument == "required" {
			return bsoncore.Value{}, mongoerr.New(mongoerr.NoMatchingDocument, "Change stream was configured to require a post-image for all update events, but the post-image was not found for event: %s", missingImageEvent(e, ev))
		}
		return nullValue, nil
	}
	return bsoncore.Value{}, nil
}

// beforeChange is an event's fullDocumentBeforeChange (zero Value: the
// field is left out).
func (cs *changeStream) beforeChange(e storage.ChangeEntry, ev storage.ChangeEvent) (bsoncore.Value, error) {
	if cs.args.beforeChange == "off" || (ev.Op != "update" && ev.Op != "replace" && ev.Op != "delete") {
		return bsoncore.Value{}, nil
	}
	if ev.Pre != nil {
		return value.DocValue(ev.Pre), nil
	}
	if cs.args.beforeChange == "required" {
		return bsoncore.Value{}, mongoerr.New(mongoerr.NoMatchingDocument, "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s", missingImageEvent(e, ev))
	}
	return nullValue, nil
}

// missingImageEvent names the event whose image is missing, as mongod's
// NoMatchingDocument message does.
func missingImageEvent(e storage.ChangeEntry, ev storage.ChangeEvent) string {
	at := stampTime(e.At)
	b := bsoncore.NewDocumentBuilder().AppendString("operationType", ev.Op).
		AppendDocument("ns", bsoncore.NewDocumentBuilder().AppendString("db", e.DB).AppendString("coll", ev.Coll).Build()).
		AppendTimestamp("clusterTime", at.t, at.i)
	if e.Txn != nil {
		b.AppendInt64("txnNumber", e.Txn.Number)
	}
	return value.Format(value.DocValue(b.Build()))
}

// lookup is updateLookup: the document as it is now on the branch (null
// when it is gone).
func (cs *changeStream) lookup(ctx context.Context, e storage.ChangeEntry, ev storage.ChangeEvent) (bsoncore.Value, error) {
	snap, err := cs.snapshotOf(ctx, e)
	if err != nil || snap == nil {
		return nullValue, err
	}
	doc, found, err := snap.Get(ctx, ev.Coll, ev.Key.Lookup("_id"))
	if err != nil || !found {
		return nullValue, err
	}
	return value.DocValue(doc), nil
}

// snapshotOf is the current state of the watched branch of e's database.
// One snapshot serves the batch's events while it is not older than
// their entry: the batch reads entries as it goes, and a write logged
// after the snapshot was taken must find its document as it wrote it.
func (cs *changeStream) snapshotOf(ctx context.Context, e storage.ChangeEntry) (*storage.Snapshot, error) {
	if ls, ok := cs.snaps[e.DB]; ok && e.Seq < ls.logNext {
		return ls.snap, nil
	}
	// Read before the snapshot is taken: a write's state is published
	// before its entry is logged, so the snapshot holds every entry below.
	logNext := cs.s.engine.Changes().Stats().Next
	d, err := cs.s.engine.Database(ctx, e.DB, false)
	if err != nil || d == nil {
		return nil, err
	}
	snap, err := d.BranchSnapshot(ctx, cs.scope.branch)
	if err != nil {
		return nil, err
	}
	if cs.snaps == nil {
		cs.snaps = map[string]lookupSnapshot{}
	}
	cs.snaps[e.DB] = lookupSnapshot{snap: snap, logNext: logNext}
	return snap, nil
}

// invalidateDoc is the event that ends a stream.
func invalidateDoc(token resumeToken, e storage.ChangeEntry) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendDocument("_id", token.doc()).
		AppendString("operationType", "invalidate").
		AppendTimestamp("clusterTime", token.at.t, token.at.i).
		AppendDateTime("wallTime", e.Wall.UnixMilli()).
		Build()
}

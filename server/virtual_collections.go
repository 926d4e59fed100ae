package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Virtual collections: collections whose documents the server builds
// for each read rather than keeps in a database: admin's authorization
// collections (auth_collections.go) and each database's system.profile
// (profiler.go). find, count, aggregate and listIndexes read them; every
// other command meets them as before.

// virtualColl is one virtual collection: its namespace, its documents
// and its indexes as listIndexes shows them.
type virtualColl struct {
	ns      string
	docs    func() []bsoncore.Document
	indexes []bsoncore.Document
}

// virtualCollectionHandler routes a read of a virtual collection (ok
// false: the request is no such read).
func (r *request) virtualCollectionHandler() (func(*request) (bsoncore.Document, error), bool) {
	if r.rev != "" || r.txn != nil {
		return nil, false
	}
	coll, ok := r.cmd.Index(0).Value().StringValueOK()
	if !ok {
		return nil, false
	}
	switch r.name {
	case "find", "count", "aggregate", "listIndexes":
	default:
		return nil, false
	}
	vc, ok, err := r.authCollection(coll)
	if !ok {
		vc, ok = r.profileCollection(coll)
	}
	switch {
	case !ok:
		return nil, false
	case err != nil:
		return func(*request) (bsoncore.Document, error) { return nil, err }, true
	}
	return map[string]func(*request) (bsoncore.Document, error){
		"find": vc.find, "count": vc.count, "aggregate": vc.aggregate, "listIndexes": vc.listIndexes,
	}[r.name], true
}

// pipeline runs stages over the collection's documents, as an aggregate
// of its database whose first stage is $documents, answering for the
// command itself (a getMore goes on with the cursor it made).
func (vc *virtualColl) pipeline(r *request, stages []bsoncore.Document, cursor bsoncore.Document) (bsoncore.Document, error) {
	docs := bsoncore.NewArrayBuilder()
	for _, d := range vc.docs() {
		docs.AppendDocument(d)
	}
	// $literal: the documents are data, whose field names ("$db" of a
	// profiled command, ...) an expression would read as operators.
	literal := bsoncore.NewDocumentBuilder().AppendArray("$literal", docs.Build()).Build()
	pipeline := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("$documents", literal).Build())
	for _, st := range stages {
		pipeline.AppendDocument(st)
	}
	if cursor == nil {
		cursor = bsoncore.NewDocumentBuilder().Build()
	}
	cmd := bsoncore.NewDocumentBuilder().AppendInt32("aggregate", 1).AppendArray("pipeline", pipeline.Build()).
		AppendDocument("cursor", cursor).Build()
	db, _, _ := strings.Cut(vc.ns, ".")
	sub := &request{c: r.c, ctx: r.ctx, cmd: cmd, name: "aggregate", db: db, spec: commandsByName["aggregate"], session: r.session}
	reply, err := cmdAggregate(sub)
	if err != nil {
		return nil, err
	}
	return r.renameCursor(reply, vc.ns), nil
}

// renameCursor gives a cursor reply, and the cursor it opened, the
// namespace ns, so that its getMores name the collection read.
func (r *request) renameCursor(reply bsoncore.Document, ns string) bsoncore.Document {
	cur, ok := reply.Lookup("cursor").DocumentOK()
	if !ok {
		return reply
	}
	if id, ok := cur.Lookup("id").Int64OK(); ok && id != 0 {
		if c := r.c.s.cursors.get(id); c != nil {
			c.ns = ns
		}
	}
	rewrite := func(d bsoncore.Document, fn func(b *bsoncore.DocumentBuilder, el bsoncore.Element)) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder()
		els, _ := d.Elements()
		for _, el := range els {
			fn(b, el)
		}
		return b.Build()
	}
	cur = rewrite(cur, func(b *bsoncore.DocumentBuilder, el bsoncore.Element) {
		if el.Key() == "ns" {
			b.AppendString("ns", ns)
		} else {
			b.AppendValue(el.Key(), el.Value())
		}
	})
	return rewrite(reply, func(b *bsoncore.DocumentBuilder, el bsoncore.Element) {
		if el.Key() == "cursor" {
			b.AppendDocument("cursor", cur)
		} else {
			b.AppendValue(el.Key(), el.Value())
		}
	})
}

// find is find on the collection: its filter, sort, skip, limit,
// projection and batchSize; a hint of $natural, as mongodump sends,
// reads them in their order.
func (vc *virtualColl) find(r *request) (bsoncore.Document, error) {
	var stages []bsoncore.Document
	stage := func(name string, v bsoncore.Value) {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendValue(name, v).Build())
	}
	cursor := bsoncore.NewDocumentBuilder()
	var refused string
	err := value.EachField(r.cmd, func(k string, v bsoncore.Value) error {
		switch k {
		case "hint":
			if !isNaturalHint(v) {
				refused = k // a hint other than $natural names an index these collections have none of to use
			}
		case "noCursorTimeout", "singleBatch":
			if b, _ := asBool(v); b {
				refused = k
			}
		case "find", "$db", "lsid", "$clusterTime", "$readPreference", "readConcern", "maxTimeMS", "comment", "txnNumber", "apiVersion", "apiStrict", "apiDeprecationErrors":
		case "filter":
			stage("$match", v)
		case "sort":
			stage("$sort", v)
		case "skip":
			stage("$skip", v)
		case "limit":
			if n, ok := value.WholeInt64(v); ok && n != 0 {
				stage("$limit", value.Count(max(n, -n)))
			}
		case "projection":
			if d, ok := v.DocumentOK(); ok && len(d) > 5 {
				stage("$project", v)
			}
		case "batchSize":
			cursor.AppendValue("batchSize", v)
		default:
			refused = k
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if refused != "" {
		return nil, mongoerr.New(mongoerr.NotImplemented, "find on %s with '%s' is not supported by DumboDB", vc.ns, refused)
	}
	return vc.pipeline(r, stages, cursor.Build())
}

// count is count on the collection.
func (vc *virtualColl) count(r *request) (bsoncore.Document, error) {
	var stages []bsoncore.Document
	for _, f := range []struct{ arg, stage string }{{"query", "$match"}, {"skip", "$skip"}, {"limit", "$limit"}} {
		if v := r.cmd.Lookup(f.arg); v.Type != 0 && v.Type != bsoncore.TypeNull {
			if n, ok := value.WholeInt64(v); ok && f.arg == "limit" {
				if n == 0 {
					continue
				}
				v = value.Count(max(n, -n))
			}
			stages = append(stages, bsoncore.NewDocumentBuilder().AppendValue(f.stage, v).Build())
		}
	}
	stages = append(stages, bsoncore.NewDocumentBuilder().AppendString("$count", "n").Build())
	reply, err := vc.pipeline(r, stages, nil)
	if err != nil {
		return nil, err
	}
	n := int32(0)
	if batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK(); ok {
		if first, err := batch.IndexErr(0); err == nil {
			n = first.Document().Lookup("n").Int32()
		}
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("n", n).AppendDouble("ok", 1).Build(), nil
}

// aggregate is aggregate on the collection: its pipeline after the
// collection's documents.
func (vc *virtualColl) aggregate(r *request) (bsoncore.Document, error) {
	arr, ok := r.cmd.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'pipeline' option must be specified as an array")
	}
	vals, _ := arr.Values()
	stages := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		if first, err := d.IndexErr(0); err == nil && (first.Key() == "$out" || first.Key() == "$merge") {
			return nil, mongoerr.New(mongoerr.NotImplemented, "%s from %s is not supported by DumboDB", first.Key(), vc.ns)
		}
		stages = append(stages, d)
	}
	cursor, _ := r.cmd.Lookup("cursor").DocumentOK()
	return vc.pipeline(r, stages, cursor)
}

// listIndexes lists the collection's indexes.
func (vc *virtualColl) listIndexes(r *request) (bsoncore.Document, error) {
	return r.startCursor(vc.ns, &sliceSource{docs: vc.indexes}, batchSizeAbsent, false, false)
}

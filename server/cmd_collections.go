package server

import (
	"errors"
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// idIndexSpec is the spec of the _id index every collection has.
func idIndexSpec() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendInt32("v", 2).
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendString("name", "_id_").Build()
}

// idIndexSpecOf is a collection's _id index spec: under its default
// collation, which mongod lists with the index (mongorestore recreates
// the index from that listing).
func idIndexSpecOf(ci storage.CollectionInfo) bsoncore.Document {
	coll, ok := ci.Options.Lookup("collation").DocumentOK()
	if !ok {
		return idIndexSpec()
	}
	return appendFields(idIndexSpec(), func(b *bsoncore.DocumentBuilder) { b.AppendDocument("collation", coll) })
}

func collectionEntry(ci storage.CollectionInfo, nameOnly bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("name", ci.Name).AppendString("type", "collection")
	if nameOnly {
		return b.Build()
	}
	info := bsoncore.NewDocumentBuilder().
		AppendBoolean("readOnly", false).
		AppendBinary("uuid", 4, ci.UUID[:]).Build()
	b.AppendDocument("options", ci.Options).AppendDocument("info", info)
	if clusteredIndexOf(ci) == nil { // a clustered collection has no _id index of its own
		b.AppendDocument("idIndex", idIndexSpecOf(ci))
	}
	return b.Build()
}

func cmdListCollections(r *request) (bsoncore.Document, error) {
	var filter, cursorOpts bsoncore.Document
	var nameOnly bool
	err := r.parseArgs(map[string]fieldHandler{
		"filter":                r.optDocArg("filter", &filter),
		"nameOnly":              r.boolArg("nameOnly", &nameOnly),
		"authorizedCollections": r.ignoredArg("authorizedCollections", "bool"),
		"cursor":                r.docArg("cursor", &cursorOpts),
		"includePendingDrops":   r.ignoredArg("includePendingDrops", "bool"),
	})
	if err != nil {
		return nil, err
	}
	batchSize, err := cursorBatchSize(r, cursorOpts)
	if err != nil {
		return nil, err
	}
	var match *query.Filter
	if filter != nil {
		if match, err = query.CompileFilter(filter); err != nil {
			return nil, err
		}
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	var docs []bsoncore.Document
	add := func(entry func(nameOnly bool) bsoncore.Document) {
		if match == nil || match.Match(entry(false)) {
			docs = append(docs, entry(nameOnly))
		}
	}
	views := false
	for _, ci := range snap.Collections() {
		if entry, ok := timeseriesCatalogEntry(snap, ci); ok {
			views = views || isTimeseries(ci) // mongod's time-series collections are views
			add(entry)
			continue
		}
		if _, isView := viewOf(ci); isView {
			views = true
			add(func(n bool) bsoncore.Document { return viewEntry(ci, n) })
			continue
		}
		add(func(n bool) bsoncore.Document { return collectionEntry(ci, n) })
	}
	if views {
		add(systemViewsEntry)
	}
	if r.db == "admin" && r.rev == "" {
		for _, entry := range r.authCollectionEntries() {
			add(entry)
		}
	}
	if _, ok := r.profileCollection("system.profile"); ok && r.rev == "" {
		add(profileCollectionEntry)
	}
	return r.startCursor(r.db+".$cmd.listCollections", &sliceSource{docs: docs}, batchSize, false, false)
}

// cursorBatchSize reads {cursor: {batchSize: n}}; 0 means the default.
func cursorBatchSize(r *request, opts bsoncore.Document) (int, error) {
	if opts == nil {
		return batchSizeAbsent, nil
	}
	v, err := opts.LookupErr("batchSize")
	if err != nil {
		return batchSizeAbsent, nil
	}
	n, ok := value.AsInt64(v)
	if !ok {
		return 0, typesMismatch("cursor", "batchSize", v, numberTypes) // mongod names the cursor options' own parser
	}
	if n < 0 {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'batchSize' value must be >= 0, actual value '%d'", n)
	}
	return int(n), nil
}

// createArgs are create's arguments; opts collects, in the command's
// order, the options the catalog keeps.
type createArgs struct {
	opts             *bsoncore.DocumentBuilder
	viewOn, pipeline bsoncore.Value
	idIndex          bsoncore.Value // the _id index's spec, as mongorestore sends it
	collation        bsoncore.Document
	validation       validationOptions
	ts               *tsOptions
	capped           cappedArgs
}

// fields declares create's options: each is kept, parsed into the
// arguments, or refused.
func (a *createArgs) fields() map[string]fieldHandler {
	keep := func(field, want string) fieldHandler {
		check := argTypes[want]
		return func(v bsoncore.Value) error {
			if check != nil && !check(v) {
				return typeMismatch("create", field, v, want)
			}
			a.opts.AppendValue(field, v)
			return nil
		}
	}
	h := map[string]fieldHandler{
		"viewOn":                       func(v bsoncore.Value) error { a.viewOn = v; return nil },   // createView checks it
		"pipeline":                     func(v bsoncore.Value) error { a.pipeline = v; return nil }, // createView checks it
		"capped":                       a.cappedField("capped"),
		"size":                         a.cappedField("size"),
		"max":                          a.cappedField("max"),
		"clusteredIndex":               a.clusteredIndexField,
		"timeseries":                   a.timeseriesField,
		"collation":                    a.collationField,
		"encryptedFields":              func(bsoncore.Value) error { return createUnsupported("encryptedFields") },
		"storageEngine":                keep("storageEngine", "object"),
		"indexOptionDefaults":          keep("indexOptionDefaults", "object"),
		"changeStreamPreAndPostImages": keep("changeStreamPreAndPostImages", "object"),
		"mergeMode": func(v bsoncore.Value) error {
			m, err := parseMergeMode("create", v)
			a.opts.AppendString("mergeMode", m)
			return err
		},
		"expireAfterSeconds": keep("expireAfterSeconds", "any"),                          // checkClusteredTTL checks it
		"idIndex":            func(v bsoncore.Value) error { a.idIndex = v; return nil }, // checkIDIndex checks it
	}
	for _, k := range validationOptionNames {
		h[k] = func(v bsoncore.Value) error {
			if err := a.validation.parse("create", k, v); err != nil {
				return err
			}
			if k != "validator" || len(a.validation.validator) > 5 { // mongod keeps no empty validator
				a.opts.AppendValue(k, v)
			}
			return nil
		}
	}
	return h
}

func (a *createArgs) cappedField(k string) fieldHandler {
	return func(v bsoncore.Value) error { a.capped.set(k, v); return nil }
}

func (a *createArgs) clusteredIndexField(v bsoncore.Value) error {
	spec, err := parseClusteredIndex(v)
	if err == nil && spec != nil {
		a.opts.AppendDocument("clusteredIndex", spec)
	}
	return err
}

func (a *createArgs) timeseriesField(v bsoncore.Value) error {
	o, err := parseTimeseries(v)
	if err == nil {
		a.ts = &o
	}
	return err
}

func (a *createArgs) collationField(v bsoncore.Value) error {
	c, err := parseCreateCollation(v)
	if err == nil && c != nil {
		a.collation = c.Expanded()
		a.opts.AppendDocument("collation", a.collation)
	}
	return err
}

func createUnsupported(option string) error {
	return mongoerr.New(mongoerr.NotImplemented, "create option '%s' is not supported by DumboDB yet", option)
}

func cmdCreate(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	a := createArgs{opts: bsoncore.NewDocumentBuilder()}
	if err := r.parseArgs(a.fields()); err != nil {
		return nil, err
	}
	opts, viewOn, pipeline, collation, validation, ts, capped := a.opts, a.viewOn, a.pipeline, a.collation, &a.validation, a.ts, a.capped
	cappedOpts, err := capped.options("create")
	if err != nil {
		return nil, err
	}
	built := withPrefix(cappedOpts, opts.Build())
	if ts != nil {
		return r.createTimeseriesReply(coll, *ts, built, viewOn.Type != 0 || pipeline.Type != 0 || validation.given())
	}
	if err := checkClusteredTTL(built); err != nil {
		return nil, err
	}
	if err := checkCappedWith(built, viewOn); err != nil {
		return nil, err
	}
	if viewOn.Type != 0 && (keepsImagesOption(built) || validation.given()) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: changeStreamPreAndPostImages or a validator")
	}
	if err := validation.check(r.db, coll, collation, false); err != nil {
		return nil, err
	}
	if a.idIndex.Type != 0 {
		if viewOn.Type != 0 || built.Lookup("clusteredIndex").Type != 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "the 'idIndex' option is not supported with 'viewOn' or 'clusteredIndex'")
		}
		if err := checkIDIndex(a.idIndex, r.ns(coll), collation); err != nil {
			return nil, err
		}
	}
	switch {
	case viewOn.Type != 0:
		err = r.createView(coll, viewOn, pipeline, collation)
	case pipeline.Type != 0:
		return nil, mongoerr.New(mongoerr.BadValue, "'pipeline' requires 'viewOn' to also be specified")
	default:
		err = r.write(func(tx *storage.Tx) error {
			if info, ok := tx.Collection(coll); ok && r.createUUID == nil {
				if r.txn != nil { // a transaction's create only ever makes one
					return storage.ErrNamespaceExists
				}
				return existingCollection(r.ns(coll), info, built)
			}
			var err error
			if r.createUUID != nil {
				_, err = tx.CreateCollectionWithUUID(r.ctx, coll, built, *r.createUUID)
			} else {
				_, err = tx.CreateCollection(r.ctx, coll, built)
			}
			return err
		})
	}
	if errors.Is(err, storage.ErrNamespaceExists) {
		return nil, mongoerr.New(mongoerr.NamespaceExists, "Collection %s already exists.", r.ns(coll))
	}
	if err != nil {
		return nil, err
	}
	return okReply(), nil
}

// existingCollection answers a create of a collection that exists as
// mongod does since 7.0: done when the options are the ones it has (so
// that clients that create what they use at start-up may race), refused
// with its options otherwise. A view or time-series collection keeps the
// older answer.
func existingCollection(ns string, info storage.CollectionInfo, opts bsoncore.Document) error {
	if info.IsView() || isTimeseries(info) {
		return storage.ErrNamespaceExists
	}
	if sameFields(info.Options, opts) {
		return nil
	}
	shown := "{ uuid: UUID(\"" + uuidText(info.UUID[:]) + "\")"
	if nonEmpty(info.Options) {
		shown += ", " + strings.TrimPrefix(value.Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: info.Options}), "{ ")
	} else {
		shown += " }"
	}
	return mongoerr.New(mongoerr.NamespaceExists, "namespace %s already exists, but with different options: %s", ns, shown)
}

// sameFields reports whether two documents have the same fields with the
// same values, in any order.
func sameFields(a, b bsoncore.Document) bool {
	ae, _ := a.Elements()
	be, _ := b.Elements()
	if len(ae) != len(be) {
		return false
	}
	for _, el := range ae {
		v, err := b.LookupErr(el.Key())
		if err != nil || !value.Same(v, el.Value()) {
			return false
		}
	}
	return true
}

// parseCreateCollation validates create's collation option; nil is the
// simple collation, which mongod does not store.
func parseCreateCollation(v bsoncore.Value) (*value.Collation, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, typeMismatch("create", "collation", v, "object")
	}
	return value.ParseCollation(d)
}

func cmdDrop(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	if coll == "system.profile" && r.rev == "" && r.txn == nil {
		found, err := r.c.s.profiler.dropProfile(r.db)
		if err != nil || found {
			return dropProfileReply(r, err)
		}
	}
	if err := r.keepDropped(coll); err != nil {
		return nil, err
	}
	reply := bsoncore.NewDocumentBuilder()
	err = r.writeExisting(func(tx *storage.Tx) error {
		if info, ok := tx.Collection(coll); ok {
			reply = droppedReply(info, r.ns(coll))
		}
		if err := dropTimeseries(tx, coll); err != nil {
			return err
		}
		return tx.DropCollection(coll)
	})
	// Since MongoDB 7.0 dropping a missing collection succeeds: {ok: 1}.
	if err != nil && !errors.Is(err, storage.ErrNamespaceNotFound) {
		return nil, err
	}
	r.killCursorsOn(coll, "collection dropped")
	return reply.AppendDouble("ok", 1).Build(), nil
}

// dropProfileReply is drop's reply for system.profile, which has no
// indexes.
func dropProfileReply(r *request, err error) (bsoncore.Document, error) {
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("nIndexesWas", 0).AppendString("ns", r.ns("system.profile")).
		AppendDouble("ok", 1).Build(), nil
}

// droppedReply is drop's reply for what it drops, as mongod's: the
// indexes a collection had (its _id index, which a clustered collection
// lacks, and the others) and its namespace; a view had no indexes.
func droppedReply(info storage.CollectionInfo, ns string) *bsoncore.DocumentBuilder {
	b := bsoncore.NewDocumentBuilder()
	if !info.IsView() {
		n := len(info.Indexes)
		if clusteredIndexOf(info) == nil {
			n++
		}
		b.AppendInt32("nIndexesWas", int32(n))
	}
	return b.AppendString("ns", ns)
}

func cmdRenameCollection(r *request) (bsoncore.Document, error) {
	var from, to string
	var dropTarget bool
	err := r.parseArgs(map[string]fieldHandler{
		"to":         r.stringArg("to", &to),
		"dropTarget": r.boolArg("dropTarget", &dropTarget),
		"stayTemp":   r.ignoredArg("stayTemp", "bool"),
	})
	if err != nil {
		return nil, err
	}
	fromV := r.cmd.Index(0).Value()
	if from, err = stringValue(r.name, "renameCollection", fromV); err != nil {
		return nil, err
	}
	fromDB, fromColl, ok1 := splitNamespace(from)
	toDB, toColl, ok2 := splitNamespace(to)
	fromName, fromRev := splitDBName(fromDB)
	toName, _ := splitDBName(toDB)
	if !ok1 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid source namespace: %s", from)
	}
	if !ok2 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid target namespace: %s", to)
	}
	for _, ns := range [][2]string{{fromName, fromColl}, {toName, toColl}} {
		if err := validateDBName(ns[0]); err != nil {
			return nil, err
		}
		if err := validateCollectionName(ns[0], ns[1]); err != nil {
			return nil, err
		}
	}
	if err := validateCreatableDB(toName, toColl); err != nil {
		return nil, err
	}
	if fromDB != toDB {
		return renameAcrossDatabases(r, fromDB, fromColl, toDB, toColl, dropTarget)
	}
	if from == to {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Can't rename a collection to itself")
	}
	d, err := r.c.s.engine.Database(r.ctx, fromName, false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s does not exist", from)
	}
	target := &request{c: r.c, ctx: r.ctx, cmd: r.cmd, generic: r.generic, name: r.name, db: fromName, rev: fromRev}
	err = target.writeTo(d, func(tx *storage.Tx) error {
		if err := refuseTimeseriesRename(tx, target.ns, fromColl, toColl); err != nil {
			return err
		}
		return tx.RenameCollection(fromColl, toColl, dropTarget)
	})
	switch {
	case errors.Is(err, storage.ErrNamespaceNotFound):
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s does not exist", from)
	case errors.Is(err, storage.ErrNamespaceExists):
		return nil, mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
	case err != nil:
		return nil, err
	}
	target.killCursorsOn(fromColl, "collection renamed")
	return okReply(), nil
}

func stringValue(cmd, field string, v bsoncore.Value) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", typeMismatch(cmd, field, v, "string")
	}
	return s, nil
}

func cmdCollStats(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	ns := r.ns(coll)
	if info, ok, err := r.collectionInfo(coll); err == nil && ok && isTimeseries(info) {
		coll = bucketsPrefix + coll // a time-series collection's figures are its buckets'
	}
	if err := r.refuseView(coll); err != nil {
		return nil, err
	}
	scale := int64(1)
	err = r.parseArgs(map[string]fieldHandler{
		"scale":   r.scaleArg(&scale),
		"verbose": r.ignoredArg("verbose", "bool"),
	})
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	info, ok := snap.Collection(coll)
	if !ok {
		return missingCollStats(ns, scale), nil
	}
	st, err := r.collectionStats(snap, coll)
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns)
	if strings.HasPrefix(coll, bucketsPrefix) && ns != r.ns(coll) {
		b.AppendDocument("timeseries", bsoncore.NewDocumentBuilder().AppendString("bucketsNs", r.ns(coll)).
			AppendValue("bucketCount", value.Count(st.count)).Build())
	}
	appendStorageStats(b, info, st, scale) // stats.go
	return b.AppendDouble("ok", 1).Build(), nil
}

// missingCollStats is collStats of a collection that does not exist:
// mongod answers zeros rather than NamespaceNotFound.
func missingCollStats(ns string, scale int64) bsoncore.Document {
	empty := bsoncore.NewDocumentBuilder().Build()
	return bsoncore.NewDocumentBuilder().AppendString("ns", ns).
		AppendInt32("size", 0).AppendInt32("count", 0).AppendInt32("numOrphanDocs", 0).
		AppendInt32("storageSize", 0).AppendInt32("totalSize", 0).AppendInt32("nindexes", 0).
		AppendInt32("totalIndexSize", 0).AppendDocument("indexDetails", empty).AppendDocument("indexSizes", empty).
		AppendInt32("scaleFactor", int32(scale)).AppendDouble("ok", 1).Build()
}

// scaleArg reads a stats command's scale: any number, read as a whole
// number of bytes (saturating), at least 1, as mongod takes it.
func (r *request) scaleArg(dst *int64) fieldHandler {
	return func(v bsoncore.Value) error {
		if !value.IsNumber(v) {
			return typesMismatch(r.name, "scale", v, numberTypes)
		}
		n := saturatedInt64(v)
		if n < 1 {
			return mongoerr.New(mongoerr.BadValue, "Scale factor must be greater than zero")
		}
		*dst = n
		return nil
	}
}

// renameAcrossDatabases copies a collection into another database (each
// database is its own store) and then drops the source. Like mongod's, it
// is not atomic: a crash in between leaves both copies, never neither.
func renameAcrossDatabases(r *request, fromDB, fromColl, toDB, toColl string, dropTarget bool) (bsoncore.Document, error) {
	src := r.on(fromDB)
	dst := r.on(toDB)
	snap, err := src.snapshot()
	if err != nil {
		return nil, err
	}
	info, ok := snap.Collection(fromColl)
	if !ok {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, fromColl)
	}
	if err := refuseTimeseriesRename(snap, src.ns, fromColl, toColl); err != nil {
		return nil, err
	}
	// The source's drop, last, would refuse it after the copy was made.
	if snap.Conflicted(fromColl) {
		return nil, mongoerr.New(mongoerr.MergeInProgress, "collection %s.%s has unresolved merge conflicts; resolve them or abort the merge first", fromDB, fromColl)
	}
	it, err := snap.Scan(r.ctx, fromColl)
	if err != nil {
		return nil, err
	}
	docs, err := query.Drain(r.ctx, it)
	if err != nil {
		return nil, err
	}
	err = dst.write(func(tx *storage.Tx) error {
		if target, exists := tx.Collection(toColl); exists {
			if isTimeseries(target) {
				return mongoerr.New(mongoerr.NotImplemented, "renameCollection onto the time-series collection %s is not supported by DumboDB yet", dst.ns(toColl))
			}
			if !dropTarget {
				return mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
			}
			if err := tx.DropCollection(toColl); err != nil {
				return err
			}
		}
		if _, err := tx.CreateCollection(r.ctx, toColl, info.Options); err != nil {
			return err
		}
		for _, d := range docs {
			if err := tx.Insert(r.ctx, toColl, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := src.writeExisting(func(tx *storage.Tx) error { return tx.DropCollection(fromColl) }); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// on is a copy of the request addressed to another database ("db@rev").
func (r *request) on(full string) *request {
	db, rev := splitDBName(full)
	return &request{c: r.c, ctx: r.ctx, cmd: r.cmd, generic: r.generic, name: r.name, db: db, rev: rev}
}

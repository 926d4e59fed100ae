package server

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sort"
	"time"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The maintenance commands tools run on a collection: validate (real
// checks of every document and index entry), dataSize, dbHash and compact.

// validateReport is what validate found.
type validateReport struct {
	nrecords, invalidDocs int64
	keysPerIndex          map[string]int64
	extra, missing        map[string]int64 // entries per index
	errors                []string
	// orderProblems counts what is wrong with a capped collection's
	// insertion order (storage.Snapshot.CheckCapped).
	orderProblems int
}

// cmdValidate checks a collection as mongod's validate does: each document
// is valid BSON with an _id, and each index holds exactly the entries its
// documents make (no extra, none missing).
func cmdValidate(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var full, background, repair, metadata, checkBSON, fastCount bool
	err = r.parseArgs(map[string]fieldHandler{
		"full":                 r.boolArg("full", &full),
		"background":           r.boolArg("background", &background), // the same checks on a snapshot either way
		"repair":               r.boolArg("repair", &repair),
		"metadata":             r.boolArg("metadata", &metadata),
		"checkBSONConformance": r.boolArg("checkBSONConformance", &checkBSON), // always: every document is validated
		"enforceFastCount":     r.boolArg("enforceFastCount", &fastCount),     // always: the count is the records counted
		"scandata":             r.ignoredArg("scandata", "bool"),
		"fixMultikey":          r.refuseTrue("fixMultikey"),
		"collHash":             r.refuseTrue("collHash"),
		"checkUnique":          r.refuseTrue("checkUnique"),
		"atClusterTime": func(bsoncore.Value) error {
			return mongoerr.New(mongoerr.NotImplemented, "validate option 'atClusterTime' is not supported by DumboDB")
		},
	})
	if err != nil {
		return nil, err
	}
	opts := validateOptions{"full": full, "background": background, "repair": repair, "metadata": metadata,
		"checkBSONConformance": checkBSON, "enforceFastCount": fastCount}
	if err := opts.refuseCombinations(); err != nil {
		return nil, err
	}
	if repair {
		return nil, mongoerr.New(mongoerr.NotImplemented, "validate option 'repair' is not supported by DumboDB")
	}
	if err := r.refuseView(coll); err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	if _, ok := snap.Collection(coll); !ok {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Collection '%s' does not exist to validate.", r.ns(coll))
	}
	rep, err := r.validateCollection(snap, coll, metadata)
	if err != nil {
		return nil, err
	}
	return rep.reply(r.ns(coll), snap.Indexes(coll)), nil
}

// validateOptions are validate's boolean options by name.
type validateOptions map[string]bool

// validateExclusions are the pairs of options validate refuses together,
// in the order mongod checks them.
var validateExclusions = [][2]string{
	{"background", "full"},
	{"background", "enforceFastCount"},
	{"background", "repair"},
	{"enforceFastCount", "repair"},
	{"checkBSONConformance", "repair"},
}

// refuseCombinations refuses what mongod's validate refuses as
// InvalidOptions: the pairs above, and metadata with any other option.
func (o validateOptions) refuseCombinations() error {
	for _, pair := range validateExclusions {
		if o[pair[0]] && o[pair[1]] {
			return mongoerr.New(mongoerr.InvalidOptions, "Running the validate command with both { %s: true } and { %s: true } is not supported.", pair[0], pair[1])
		}
	}
	if o["metadata"] && (o["background"] || o["full"] || o["enforceFastCount"] || o["checkBSONConformance"] || o["repair"]) {
		return mongoerr.New(mongoerr.InvalidOptions, "Running the validate command with { metadata: true } is not supported with any other options")
	}
	return nil
}

// validateCollection reads every document (unless only metadata is
// asked for) and every index entry of coll.
func (r *request) validateCollection(snap *storage.Snapshot, coll string, metadataOnly bool) (*validateReport, error) {
	rep := &validateReport{keysPerIndex: map[string]int64{}, extra: map[string]int64{}, missing: map[string]int64{}}
	if metadataOnly {
		return rep, nil
	}
	indexes := snap.Indexes(coll)
	expected := make([]map[string]bool, len(indexes))
	for i := range expected {
		expected[i] = map[string]bool{}
	}
	it, err := snap.Scan(r.ctx, coll)
	if err != nil {
		return nil, err
	}
	for {
		doc, err := it.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		rep.checkDocument(doc, indexes, expected)
	}
	for i, ix := range indexes {
		if err := rep.checkIndex(r, snap, coll, ix, expected[i]); err != nil {
			return nil, err
		}
	}
	problems, err := snap.CheckCapped(r.ctx, coll) // a capped collection's insertion order
	if err != nil {
		return nil, err
	}
	rep.errors = append(rep.errors, problems...)
	rep.orderProblems = len(problems)
	return rep, nil
}

// checkDocument validates one document and adds the entries it makes in
// each index to expected.
func (rep *validateReport) checkDocument(doc bsoncore.Document, indexes []storage.IndexInfo, expected []map[string]bool) {
	rep.nrecords++
	id, err := doc.LookupErr("_id")
	if doc.Validate() != nil || err != nil {
		rep.invalidDocs++
		rep.errors = append(rep.errors, "a document is not valid BSON or has no _id")
		return
	}
	idKey := index.EncodeID(nil, id)
	for i, ix := range indexes {
		keys, _, err := ix.Spec.Keys(doc)
		if err != nil {
			rep.invalidDocs++
			rep.errors = append(rep.errors, "a document cannot be indexed by "+ix.Spec.Name+": "+err.Error())
			continue
		}
		for _, k := range keys {
			expected[i][string(append(append([]byte(nil), k...), idKey...))] = true
		}
	}
}

// checkIndex walks an index and compares its entries with those expected.
func (rep *validateReport) checkIndex(r *request, snap *storage.Snapshot, coll string, ix storage.IndexInfo, expected map[string]bool) error {
	name := ix.Spec.Name
	it, err := snap.IndexScan(r.ctx, coll, name, index.Interval{})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for {
		entry, idKey, err := it.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if bytes.Equal(entry, index.MultikeyMarker) {
			continue
		}
		rep.keysPerIndex[name]++
		if !expected[string(entry)] || !bytes.HasSuffix(entry, idKey) {
			rep.extra[name]++
			continue
		}
		seen[string(entry)] = true
	}
	if missing := int64(len(expected) - len(seen)); missing > 0 {
		rep.missing[name] = missing
	}
	return nil
}

func (rep *validateReport) valid() bool {
	return rep.invalidDocs == 0 && len(rep.extra) == 0 && len(rep.missing) == 0 && rep.orderProblems == 0
}

// reply is validate's answer in mongod's shape.
func (rep *validateReport) reply(ns string, indexes []storage.IndexInfo) bsoncore.Document {
	keys := bsoncore.NewDocumentBuilder().AppendInt64("_id_", rep.nrecords)
	details := bsoncore.NewDocumentBuilder().
		AppendDocument("_id_", bsoncore.NewDocumentBuilder().AppendBoolean("valid", true).Build())
	errs := bsoncore.NewArrayBuilder()
	for _, e := range rep.errors {
		errs.AppendString(e)
	}
	extra, missing := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for _, ix := range indexes {
		name := ix.Spec.Name
		keys.AppendValue(name, value.Count(rep.keysPerIndex[name]))
		ok := rep.extra[name] == 0 && rep.missing[name] == 0
		details.AppendDocument(name, bsoncore.NewDocumentBuilder().AppendBoolean("valid", ok).Build())
		if n := rep.extra[name]; n > 0 {
			extra.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("indexName", name).AppendInt64("entries", n).Build())
			errs.AppendString("index " + name + " has entries no document makes")
		}
		if n := rep.missing[name]; n > 0 {
			missing.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("indexName", name).AppendInt64("entries", n).Build())
			errs.AppendString("index " + name + " lacks entries of its documents")
		}
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("ns", ns).
		AppendValue("nInvalidDocuments", value.Count(rep.invalidDocs)).
		AppendValue("nNonCompliantDocuments", value.Count(rep.invalidDocs)).
		AppendValue("nrecords", value.Count(rep.nrecords)).
		AppendInt32("nIndexes", int32(len(indexes)+1)).
		AppendDocument("keysPerIndex", keys.Build()).
		AppendDocument("indexDetails", details.Build()).
		AppendBoolean("valid", rep.valid()).
		AppendBoolean("repaired", false).
		AppendArray("warnings", bsoncore.NewArrayBuilder().Build()).
		AppendArray("errors", errs.Build()).
		AppendArray("extraIndexEntries", extra.Build()).
		AppendArray("missingIndexEntries", missing.Build()).
		AppendArray("corruptRecords", bsoncore.NewArrayBuilder().Build()).
		AppendDouble("ok", 1).Build()
}

// cmdDataSize answers {dataSize: "db.coll"}: the bytes and count of the
// collection's documents (keyPattern, min and max are refused: no bounds).
func cmdDataSize(r *request) (bsoncore.Document, error) {
	ns, ok := r.cmd.Index(0).Value().StringValueOK()
	if !ok {
		return nil, typeMismatch("dataSize", "dataSize", r.cmd.Index(0).Value(), "string")
	}
	var estimate bool
	err := r.parseArgs(map[string]fieldHandler{
		"keyPattern": refuseOption("dataSize", "keyPattern"),
		"min":        refuseOption("dataSize", "min"),
		"max":        refuseOption("dataSize", "max"),
		"estimate":   r.boolArg("estimate", &estimate), // the sizes are exact either way
	})
	if err != nil {
		return nil, err
	}
	db, coll, ok := splitNamespace(ns)
	if !ok {
		// mongod's words for a namespace that names no collection
		// ("db", "db." or ".coll"), as it finds when it looks it up.
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Namespace %s is not a valid collection name", ns)
	}
	if db != r.db {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace: %s; dataSize takes a namespace of the database it runs on", ns)
	}
	start := time.Now()
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	st, err := r.collectionStats(snap, coll)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().
		AppendInt64("size", st.dataSize).
		AppendInt64("numObjects", st.count).
		AppendInt64("millis", time.Since(start).Milliseconds()).
		AppendDouble("ok", 1).Build(), nil
}

func refuseOption(cmd, field string) fieldHandler {
	return func(bsoncore.Value) error {
		return mongoerr.New(mongoerr.NotImplemented, "%s option '%s' is not supported by DumboDB", cmd, field)
	}
}

// cmdDBHash answers {dbHash: 1, collections?: [...]}: an MD5 of each
// collection's documents in _id order, and one of them all, so that two
// copies of a database can be compared.
func cmdDBHash(r *request) (bsoncore.Document, error) {
	var only bsoncore.Array
	err := r.parseArgs(map[string]fieldHandler{"collections": r.arrayArg("collections", &only)})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	names, err := dbHashNames(snap, only)
	if err != nil {
		return nil, err
	}
	hashes := bsoncore.NewDocumentBuilder()
	uuids := bsoncore.NewDocumentBuilder()
	all := md5.New()
	for _, name := range names {
		sum, err := r.collectionHash(snap, name)
		if err != nil {
			return nil, err
		}
		hashes.AppendString(name, sum)
		all.Write([]byte(sum))
		info, _ := snap.Collection(name)
		uuids.AppendBinary(name, 4, info.UUID[:])
	}
	host, _ := os.Hostname()
	return bsoncore.NewDocumentBuilder().
		AppendString("host", host).
		AppendDocument("collections", hashes.Build()).
		AppendArray("capped", bsoncore.NewArrayBuilder().Build()).
		AppendDocument("uuids", uuids.Build()).
		AppendString("md5", hex.EncodeToString(all.Sum(nil))).
		AppendInt64("timeMillis", time.Since(start).Milliseconds()).
		AppendDouble("ok", 1).Build(), nil
}

// dbHashNames are the collections dbHash hashes: those named (which must
// be strings), or all but views and system collections, sorted.
func dbHashNames(snap *storage.Snapshot, only bsoncore.Array) ([]string, error) {
	want := map[string]bool{}
	if only != nil {
		vals, _ := only.Values()
		for i, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				return nil, typeMismatch("dbHash", "collections."+itoa(int64(i)), v, "string")
			}
			want[s] = true
		}
	}
	var names []string
	for _, ci := range snap.Collections() {
		if _, isView := viewOf(ci); isView || (only != nil && !want[ci.Name]) {
			continue
		}
		names = append(names, ci.Name)
	}
	sort.Strings(names)
	return names, nil
}

// collectionHash is the MD5 of a collection's documents in _id order (a
// capped collection's in insertion order, as mongod's dbHash reads one).
func (r *request) collectionHash(snap *storage.Snapshot, coll string) (string, error) {
	h := md5.New()
	it, err := snap.Scan(r.ctx, coll)
	if err != nil {
		return "", err
	}
	for {
		doc, err := it.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
		h.Write(doc)
	}
}

// cmdCompact answers {compact: coll}: it checkpoints the database and
// collects the chunks nothing references any more (dumboGC), and reports
// the bytes that freed on disk.
func cmdCompact(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var force bool
	err = r.parseArgs(map[string]fieldHandler{
		"force":             r.boolArg("force", &force), // a one-member set is always primary
		"dryRun":            r.refuseTrue("dryRun"),
		"freeSpaceTargetMB": refuseOption("compact", "freeSpaceTargetMB"),
	})
	if err != nil {
		return nil, err
	}
	if err := r.refuseView(coll); err != nil {
		return nil, err
	}
	d, err := r.database(false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "database %s does not exist", r.db)
	}
	before, after, err := d.GC(r.ctx)
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendInt64("bytesFreed", max(before-after, 0)).AppendDouble("ok", 1).Build(), nil
}

package server

import (
	"errors"
	"fmt"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxIndexes is mongod's limit of indexes per collection, _id included.
const maxIndexes = 64

func cmdCreateIndexes(r *request) (bsoncore.Document, error) {
	if reply, ts, err := r.timeseriesIndexes(cmdCreateIndexes, "indexes"); ts {
		return reply, err
	}
	coll, err := r.idlCollectionArg()
	if err != nil {
		return nil, err
	}
	if err := r.refuseView(coll); err != nil {
		return nil, err
	}
	var specs bsoncore.Array
	var ignoreUnknown bool
	err = r.parseArgs(map[string]fieldHandler{
		"indexes":                   indexesArg(r, &specs),
		"commitQuorum":              r.ignoredArg("commitQuorum", "any"),
		"ignoreUnknownIndexOptions": r.boolArg("ignoreUnknownIndexOptions", &ignoreUnknown),
	})
	if err != nil {
		return nil, err
	}
	if specs == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'createIndexes.indexes' is missing but a required field")
	}
	requested, err := parseIndexSpecs(specs, ignoreUnknown, r.defaultCollation(coll))
	if err != nil {
		return nil, err
	}
	prepared, err := r.prepareIndexes(coll, requested)
	if err != nil {
		return nil, indexBuildError(r.ns(coll), err)
	}
	var before, after int
	var created bool
	if err := r.refuseIndexOnExistingInTxn(coll); err != nil {
		return nil, err
	}
	err = r.write(func(tx *storage.Tx) error {
		if created, err = tx.EnsureCollection(r.ctx, coll); err != nil {
			return err
		}
		info, _ := tx.Collection(coll)
		raws, err := mergeIndexSpecs(info, requested)
		if err != nil {
			return err
		}
		before, after = len(info.Indexes)+1, len(raws)+1
		if after > maxIndexes {
			return mongoerr.New(mongoerr.CannotCreateIndex, "add index fails, too many indexes for %s", r.ns(coll))
		}
		if after == before {
			return nil
		}
		return tx.SetIndexes(r.ctx, coll, raws, prepared)
	})
	if err != nil {
		return nil, indexBuildError(r.ns(coll), err)
	}
	b := bsoncore.NewDocumentBuilder().
		AppendInt32("numIndexesBefore", int32(before)).
		AppendInt32("numIndexesAfter", int32(after)).
		AppendBoolean("createdCollectionAutomatically", created)
	if before == after {
		b.AppendString("note", "all indexes already exist")
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// prepareIndexes builds the requested indexes from a snapshot before the
// write takes the branch's lock, so that writers wait only for the
// catch-up with what they wrote meanwhile (nil when there is nothing to
// build ahead: a new collection, or specs the write will refuse).
func (r *request) prepareIndexes(coll string, requested []*index.Spec) (*storage.PreparedIndexes, error) {
	d, err := r.database(false)
	if err != nil || d == nil {
		return nil, nil
	}
	if rev, err := r.revision(d); err != nil || rev.ReadOnly() {
		return nil, nil
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, nil
	}
	info, ok := snap.Collection(coll)
	if !ok {
		return nil, nil
	}
	raws, err := mergeIndexSpecs(info, requested)
	if err != nil {
		return nil, nil
	}
	return storage.PrepareIndexes(r.ctx, snap, coll, raws)
}

// indexBuildError words a unique violation found while building as mongod
// does, with the namespace.
func indexBuildError(ns string, err error) error {
	var dup *storage.DuplicateKeyError
	if !errors.As(err, &dup) {
		return err
	}
	return e11000("Index build failed: ", ns, dup.Index, dup.KeyPattern, dup.KeyValue)
}

// parseIndexSpecs parses createIndexes' specs; those without a collation
// take the collection's default collation def (nil: simple), except the
// _id index, which stays simple in DumboDB.
func parseIndexSpecs(specs bsoncore.Array, ignoreUnknown bool, def bsoncore.Document) ([]*index.Spec, error) {
	vals, _ := specs.Values()
	if len(vals) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one index to create")
	}
	out := make([]*index.Spec, 0, len(vals))
	for i, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, typeMismatch("createIndexes", fmt.Sprintf("indexes.%d", i), v, "object")
		}
		if ignoreUnknown {
			d = index.StripUnknownOptions(d)
		}
		s, err := parseIndexSpec(d, def)
		if err != nil {
			return nil, inSpecification(d, err)
		}
		if _, err := d.LookupErr("name"); err != nil {
			// mongod names no index itself: drivers and shells derive the
			// name from the key before they send the spec.
			return nil, inSpecification(d, mongoerr.New(mongoerr.FailedToParse, "The 'name' field is a required property of an index specification"))
		}
		out = append(out, s)
	}
	return out, nil
}

// inSpecification gives an invalid spec's error the context mongod adds,
// keeping its code; an error mongod finds only once it has given the spec
// its version names the spec with it, or has no context (Bare).
func inSpecification(spec bsoncore.Document, err error) error {
	var late *index.LateSpecError
	if errors.As(err, &late) {
		if late.Bare {
			return late.Err
		}
		spec = index.WithVersion(spec)
	}
	me := mongoerr.As(err)
	return &mongoerr.Error{Code: me.Code, Msg: "Error in specification " + index.ShellDoc(spec) + " :: caused by :: " + me.Msg, Info: me.Info}
}

func parseIndexSpec(d, def bsoncore.Document) (*index.Spec, error) {
	s, err := index.ParseSpec(d, indexFilters)
	if err != nil || def == nil || s.IsID() {
		return s, err
	}
	if _, err := d.LookupErr("collation"); err == nil {
		return s, nil
	}
	withDefault := bsoncore.NewDocumentBuilder()
	els, _ := d.Elements()
	for _, el := range els {
		withDefault.AppendValue(el.Key(), el.Value())
	}
	return index.ParseSpec(withDefault.AppendDocument("collation", def).Build(), indexFilters)
}

// mergeIndexSpecs adds the requested specs to a collection's, skipping
// those that exist and refusing conflicting ones as mongod does. A spec
// identical to an earlier one of the same request is refused: mongod
// skips only the indexes the collection has, then builds the requested
// ones, the first of two identical specs before the second.
func mergeIndexSpecs(info storage.CollectionInfo, requested []*index.Spec) ([]bsoncore.Document, error) {
	raws := append([]bsoncore.Document(nil), info.Indexes...)
	existing, err := loadSpecs(raws)
	if err != nil {
		return nil, err
	}
	stored := len(existing)
	for _, s := range requested {
		if s.IsID() {
			continue // the _id index always exists
		}
		same, err := conflictingIndex(existing, s)
		switch {
		case err != nil:
			return nil, err
		case same >= stored:
			return nil, mongoerr.New(mongoerr.IndexAlreadyExists, "Identical index already exists: %s", s.Name)
		case same >= 0:
			continue
		}
		existing = append(existing, s)
		raws = append(raws, s.Raw)
	}
	return raws, nil
}

func loadSpecs(raws []bsoncore.Document) ([]*index.Spec, error) {
	out := make([]*index.Spec, 0, len(raws))
	for _, raw := range raws {
		s, err := index.LoadSpec(raw, indexFilters)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// conflictingIndex returns the position of the index s is identical to
// (-1: none), or the error of a clash with an index by name or key.
func conflictingIndex(existing []*index.Spec, s *index.Spec) (int, error) {
	for i, e := range existing {
		switch {
		case e.Name == s.Name && e.SameKey(s) && e.SameOptions(s):
			return i, nil
		case e.Name == s.Name && e.SameKey(s) && string(e.Partial) == string(s.Partial) && e.Collation().Equal(s.Collation()):
			// The same index (key, partial filter and collation identify
			// one) with other options, such as prepareUnique.
			return -1, mongoerr.New(mongoerr.IndexOptionsConflict,
				"An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s", index.ShellDoc(s.Raw), index.ShellDoc(e.Raw))
		case e.Text != nil && s.Text != nil:
			return -1, mongoerr.New(mongoerr.CannotCreateIndex, "only one text index per collection allowed, found existing text index \"%s\"", e.Name)
		case e.Name == s.Name:
			return -1, mongoerr.New(mongoerr.IndexKeySpecsConflict,
				"An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", index.ShellDoc(s.Raw), index.ShellDoc(e.Raw))
		case e.SameKey(s) && string(e.Partial) == string(s.Partial) && e.Collation().Equal(s.Collation()):
			// Only a different partial filter or collation lets one key be
			// indexed twice.
			return -1, mongoerr.New(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", e.Name)
		}
	}
	return -1, nil
}

func cmdDropIndexes(r *request) (bsoncore.Document, error) {
	if reply, ts, err := r.timeseriesIndexes(cmdDropIndexes, "index"); ts {
		return reply, err
	}
	coll, err := r.idlCollectionArg()
	if err != nil {
		return nil, err
	}
	if err := r.refuseView(coll); err != nil {
		return nil, err
	}
	var which bsoncore.Value
	err = r.parseArgs(map[string]fieldHandler{"index": func(v bsoncore.Value) error { which = v; return nil }})
	if err != nil {
		return nil, err
	}
	if which.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'dropIndexes.index' is missing but a required field")
	}
	var was int
	var all bool
	err = r.writeExisting(func(tx *storage.Tx) error {
		info, ok := tx.Collection(coll)
		if !ok {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s", r.ns(coll))
		}
		specs, err := loadSpecs(info.Indexes)
		if err != nil {
			return err
		}
		was = len(specs) + 1
		keep, err := indexesToKeep(specs, which)
		if err != nil {
			return err
		}
		all = len(keep) == 0 && which.Type == bsoncore.TypeString && which.StringValue() == "*"
		return tx.SetIndexes(r.ctx, coll, rawsOf(keep))
	})
	if err == nil && was == 0 {
		err = mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s", r.ns(coll))
	}
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().AppendInt32("nIndexesWas", int32(was))
	if all {
		b.AppendString("msg", "non-_id indexes dropped for collection")
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

func rawsOf(specs []*index.Spec) []bsoncore.Document {
	out := make([]bsoncore.Document, len(specs))
	for i, s := range specs {
		out[i] = s.Raw
	}
	return out
}

// indexesToKeep applies a dropIndexes "index" argument: a name, a key
// pattern, a list of names, or "*".
func indexesToKeep(specs []*index.Spec, which bsoncore.Value) ([]*index.Spec, error) {
	switch which.Type {
	case bsoncore.TypeString:
		if which.StringValue() == "*" {
			return nil, nil
		}
		return dropNames(specs, []string{which.StringValue()})
	case bsoncore.TypeArray:
		vals, _ := bsoncore.Array(which.Data).Values()
		names := make([]string, len(vals))
		for i, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				// mongod reports the list, whose elements must be names.
				return nil, typesMismatch("dropIndexes", "index", which, "string")
			}
			names[i] = s
		}
		return dropNames(specs, names)
	case bsoncore.TypeEmbeddedDocument:
		return dropKey(specs, which.Document())
	}
	return nil, typesMismatch("dropIndexes", "index", which, "string, object")
}

func dropNames(specs []*index.Spec, names []string) ([]*index.Spec, error) {
	drop := map[string]bool{}
	for _, n := range names {
		if n == index.IDIndexName {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
		}
		if n == "*" {
			return nil, mongoerr.New(mongoerr.BadValue, "'*' cannot be mixed with index names")
		}
		if !hasIndexNamed(specs, n) {
			return nil, mongoerr.New(mongoerr.IndexNotFound, "index not found with name [%s]", n)
		}
		drop[n] = true
	}
	var keep []*index.Spec
	for _, s := range specs {
		if !drop[s.Name] {
			keep = append(keep, s)
		}
	}
	return keep, nil
}

func hasIndexNamed(specs []*index.Spec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

func dropKey(specs []*index.Spec, key bsoncore.Document) ([]*index.Spec, error) {
	probe, err := index.ParseSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", key).Build(), nil)
	if err != nil {
		// No index can have a key pattern that is not valid.
		return nil, mongoerr.New(mongoerr.IndexNotFound, "can't find index with key: %s", index.ShellDoc(key))
	}
	if probe.IsID() {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
	}
	var keep []*index.Spec
	found := 0
	for _, s := range specs {
		if s.SameKey(probe) {
			found++
			continue
		}
		keep = append(keep, s)
	}
	switch found {
	case 0:
		return nil, mongoerr.New(mongoerr.IndexNotFound, "can't find index with key: %s", index.ShellDoc(key))
	case 1:
		return keep, nil
	}
	return nil, mongoerr.New(mongoerr.AmbiguousIndexKeyPattern, "%d indexes found for key: %s, identify by name instead.", found, index.ShellDoc(key))
}

// cmdListIndexesSpecs lists the _id index and every secondary index (of
// a time-series collection, its buckets' in its terms).
func cmdListIndexesSpecs(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	if info, ok, err := r.collectionInfo(coll); err != nil || !ok || !isTimeseries(info) {
		if err := r.refuseView(coll); err != nil {
			return nil, err
		}
	}
	var cursorOpts bsoncore.Document
	if err := r.parseArgs(map[string]fieldHandler{"cursor": r.docArg("cursor", &cursorOpts)}); err != nil {
		return nil, err
	}
	batchSize, err := cursorBatchSize(r, cursorOpts)
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	info, ok := snap.Collection(coll)
	if !ok {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
	}
	if o, ts := timeseriesOf(info); ts && isTimeseries(info) {
		return r.listTimeseriesIndexes(snap, coll, o, batchSize)
	}
	docs := append([]bsoncore.Document{idIndexOf(info)}, info.Indexes...)
	return r.startCursor(r.ns(coll), &sliceSource{docs: docs}, batchSize, false, false)
}

// cmdConvertShardKeyToHashed answers {convertShardKeyToHashed: <value>}
// with mongod's hash of the value: what a hashed index stores for it.
func cmdConvertShardKeyToHashed(r *request) (bsoncore.Document, error) {
	v := r.cmd.Index(0).Value()
	if err := r.parseArgs(nil); err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendInt64("outputValue", index.HashValue(v)).AppendDouble("ok", 1).Build(), nil
}

// cmdSearchIndexes answers the Atlas Search index commands as a community
// mongod does: search needs Atlas or its local deployment.
func cmdSearchIndexes(*request) (bsoncore.Document, error) {
	return nil, mongoerr.SearchNotEnabledError()
}

// indexesArg reads createIndexes' indexes, an array; mongod reads a null
// there as an object, which fails with its generic 10065.
func indexesArg(r *request, dst *bsoncore.Array) fieldHandler {
	return func(v bsoncore.Value) error {
		if v.Type == bsoncore.TypeNull {
			return mongoerr.New(mongoerr.Location10065, "invalid parameter: expected an object (indexes)")
		}
		return r.field("indexes").array(v, dst)
	}
}

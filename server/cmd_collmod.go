package server

import (
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// collModArgs are collMod's arguments.
type collModArgs struct {
	index, images    bsoncore.Document
	viewOn, pipeline bsoncore.Value
	mergeMode        bsoncore.Value
	validation       validationOptions
	ts               tsCollMod // expireAfterSeconds and timeseries (of a time-series collection)
	capped           cappedMod
	dryRun           bool
	// mods counts the modifications given outside index, as mongod's
	// numModifications does: prepareUnique goes with none of them.
	mods int
	// mixedSchema: timeseriesBucketsMayHaveMixedSchemaData was given.
	mixedSchema bool
}

func (a *collModArgs) handlers(r *request) map[string]fieldHandler {
	counted := func(h fieldHandler) fieldHandler {
		return func(v bsoncore.Value) error { a.mods++; return h(v) }
	}
	return map[string]fieldHandler{
		"index":                        r.docArg("index", &a.index),
		"validator":                    counted(a.validation.handler("collMod", "validator")),
		"validationLevel":              counted(a.validation.handler("collMod", "validationLevel")),
		"validationAction":             counted(a.validation.handler("collMod", "validationAction")),
		"viewOn":                       counted(func(v bsoncore.Value) error { a.viewOn = v; return nil }),
		"pipeline":                     counted(func(v bsoncore.Value) error { a.pipeline = v; return nil }),
		"changeStreamPreAndPostImages": counted(r.docArg("changeStreamPreAndPostImages", &a.images)),
		"mergeMode":                    counted(func(v bsoncore.Value) error { a.mergeMode = v; return nil }),
		"dryRun":                       r.boolArg("dryRun", &a.dryRun),
		"expireAfterSeconds":           a.ts.expireHandler(),
		"timeseries":                   a.ts.timeseriesHandler(),
		"cappedSize":                   counted(func(v bsoncore.Value) error { a.capped.size = v; return nil }),
		"cappedMax":                    counted(func(v bsoncore.Value) error { a.capped.max = v; return nil }),
		"timeseriesBucketsMayHaveMixedSchemaData": counted(func(v bsoncore.Value) error {
			a.mixedSchema = true
			var b bool
			return r.field("timeseriesBucketsMayHaveMixedSchemaData").bool(v, &b)
		}),
	}
}

// cmdCollMod changes a collection's options. DumboDB supports the index
// changes, none of which rebuilds the index (hidden, expireAfterSeconds,
// prepareUnique, unique, forceNonUnique), the change-stream images, the
// validator options, a view's definition and a capped collection's
// cappedSize and cappedMax.
func cmdCollMod(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var a collModArgs
	if err := r.parseArgs(a.handlers(r)); err != nil {
		return nil, err
	}
	if err := validateUserWritable(r.db, coll); err != nil {
		return nil, err
	}
	if a.mixedSchema {
		return r.collModMixedSchema(coll, &a)
	}
	others := a.viewOn.Type != 0 || a.pipeline.Type != 0 || a.images != nil || a.validation.given() || a.index != nil
	if info, ok, err := r.collectionInfo(coll); err == nil && ok && isTimeseries(info) && others {
		return nil, mongoerr.New(mongoerr.NotImplemented, "collMod of the time-series collection %s with these options is not supported by DumboDB yet", r.ns(coll))
	}
	if a.ts.given() {
		if others || a.dryRun {
			return nil, mongoerr.New(mongoerr.NotImplemented, "collMod of expireAfterSeconds or timeseries with other options is not supported by DumboDB yet")
		}
		return okReply(), r.collModTimeseries(coll, &a.ts)
	}
	if a.dryRun {
		return r.collModDryRun(coll, &a)
	}
	if a.viewOn.Type != 0 || a.pipeline.Type != 0 {
		if a.capped.given() {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "cappedSize and cappedMax can only be changed on a capped collection; %s is a view", r.ns(coll))
		}
		return okReply(), r.collModView(coll, a.viewOn, a.pipeline)
	}
	var mod *collModIndex
	if a.index != nil {
		if mod, err = parseCollModIndex(a.index); err != nil {
			return nil, err
		}
	}
	opts, err := newCollModOptions(a.images, a.mergeMode, &a.validation, a.capped)
	if err != nil {
		return nil, err
	}
	pre, err := r.scanForUnique(coll, mod, a.mods)
	if err != nil {
		return nil, err
	}
	plan, err := r.collModCollection(coll, mod, opts, a.mods, pre)
	if err != nil {
		return nil, err
	}
	if plan == nil {
		return okReply(), nil
	}
	return plan.reply(), nil
}

// collModCollection makes a collection's changes in one transaction, so
// that a refused index change leaves the options as they were; the plan
// of the index change (nil: none) gives the reply. pre is the snapshot a
// conversion to unique was checked on (nil: none).
func (r *request) collModCollection(coll string, mod *collModIndex, opts *collModOptions, mods int, pre *storage.Snapshot) (*collModIndexPlan, error) {
	var plan *collModIndexPlan
	found := false
	err := r.writeExisting(func(tx *storage.Tx) error {
		info, ok := tx.Collection(coll)
		if !ok {
			return nil
		}
		found = true
		if mod != nil {
			p, err := r.planCollModIndex(tx, info, mod, mods, pre)
			if err != nil {
				return err
			}
			plan = p
		}
		if mod == nil || opts.given() {
			if err := r.setCollModOptions(tx, info, opts); err != nil {
				return err
			}
		}
		if plan != nil {
			return tx.SetIndexes(r.ctx, coll, rawsOf(plan.specs))
		}
		return nil
	})
	if err == nil && !found {
		err = mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
	}
	return plan, err
}

// collModOptions are the collection options a collMod sets, and their
// description for the change event.
type collModOptions struct {
	images     bsoncore.Document // {enabled: <bool>}, nil: unchanged
	mergeMode  string            // "": unchanged
	validation *validationOptions
	capped     cappedMod
	desc       bsoncore.Document
}

// given reports whether the command changes any collection option.
func (o *collModOptions) given() bool {
	return o.images != nil || o.mergeMode != "" || o.validation.given() || o.capped.given()
}

func newCollModOptions(images bsoncore.Document, mergeMode bsoncore.Value, validation *validationOptions, capped cappedMod) (*collModOptions, error) {
	desc := bsoncore.NewDocumentBuilder()
	o := &collModOptions{validation: validation, capped: capped}
	if mergeMode.Type != 0 {
		var err error
		if o.mergeMode, err = parseMergeMode("collMod", mergeMode); err != nil {
			return nil, err
		}
		desc.AppendString("mergeMode", o.mergeMode)
	}
	if images != nil {
		enabled, err := parseImagesOption(images)
		if err != nil {
			return nil, err
		}
		o.images = bsoncore.NewDocumentBuilder().AppendBoolean("enabled", enabled).Build()
		desc.AppendDocument("changeStreamPreAndPostImages", o.images)
	}
	validation.describe(desc)
	o.desc = desc.Build()
	return o, nil
}

// setCollModOptions changes the collection's options: the change-stream
// images, the validator options, or nothing (a bare collMod, which mongod
// still logs: change streams see a modify event).
func (r *request) setCollModOptions(tx *storage.Tx, info storage.CollectionInfo, o *collModOptions) error {
	collation, _ := info.Options.Lookup("collation").DocumentOK()
	if err := o.validation.check(r.db, info.Name, collation, true); err != nil {
		return err
	}
	opts := o.validation.apply(info.Options)
	if o.images != nil {
		opts = withOption(opts, "changeStreamPreAndPostImages", o.images)
	}
	if o.mergeMode != "" {
		opts = withOptionValue(opts, "mergeMode", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, o.mergeMode)})
	}
	if o.capped.given() {
		var err error
		if opts, err = o.capped.apply(r.ns(info.Name), opts); err != nil {
			return err
		}
	}
	return tx.SetOptions(info.Name, opts, o.desc)
}

// parseImagesOption reads changeStreamPreAndPostImages: {enabled: <bool>}.
func parseImagesOption(d bsoncore.Document) (bool, error) {
	var enabled *bool
	els, _ := d.Elements()
	for _, el := range els {
		if el.Key() != "enabled" {
			return false, unknownField("changeStreamPreAndPostImages", el.Key())
		}
		b, ok := el.Value().BooleanOK()
		if !ok {
			return false, typeMismatch("changeStreamPreAndPostImages", "enabled", el.Value(), "bool")
		}
		enabled = &b
	}
	if enabled == nil {
		return false, mongoerr.New(mongoerr.Location40414, "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required field")
	}
	return *enabled, nil
}

// withOption is opts with key set to v (replacing it or appended).
func withOption(opts bsoncore.Document, key string, v bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := opts.Elements()
	for _, el := range els {
		if el.Key() != key {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.AppendDocument(key, v).Build()
}

// collModMixedSchema is collMod's timeseriesBucketsMayHaveMixedSchemaData,
// which mongorestore sends when a bucket it restores is refused for
// mixing types in a field. DumboDB's reads of a time-series collection
// unpack every bucket whatever its fields' types, so a bucket that mixes
// them reads right either way: the flag is taken, alone, on a
// time-series collection.
func (r *request) collModMixedSchema(coll string, a *collModArgs) (bsoncore.Document, error) {
	info, ok, err := r.collectionInfo(coll)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
	case !isTimeseries(info):
		return nil, mongoerr.New(mongoerr.InvalidOptions, "option only supported on a time-series collection: timeseriesBucketsMayHaveMixedSchemaData")
	case a.mods > 1 || a.ts.given() || a.index != nil || a.dryRun:
		return nil, mongoerr.New(mongoerr.NotImplemented, "collMod of timeseriesBucketsMayHaveMixedSchemaData with other options is not supported by DumboDB yet")
	}
	return okReply(), nil
}

package server

import (
	"dumbodb/index"
	"dumbodb/query/mongoerr"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// collModIndex is collMod's index argument: which index, and the options
// to change on it.
type collModIndex struct {
	keyPattern bsoncore.Document
	name       string
	hidden     *bool
	expire     bsoncore.Value // zero: unchanged
}

// cmdCollMod changes a collection's options. DumboDB supports the index
// changes that need no rebuild (hidden, expireAfterSeconds), the
// change-stream images and the validator options; views and unique
// conversions are refused.
func cmdCollMod(r *request) (bsoncore.Document, error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	var ixArg, images bsoncore.Document
	var viewOn, pipeline bsoncore.Value
	var validation validationOptions
	var tsMod tsCollMod
	err = r.parseArgs(map[string]fieldHandler{
		"index":                        r.docArg("index", &ixArg),
		"validator":                    validation.handler("collMod", "validator"),
		"validationLevel":              validation.handler("collMod", "validationLevel"),
		"validationAction":             validation.handler("collMod", "validationAction"),
		"viewOn":                       func(v bsoncore.Value) error { viewOn = v; return nil },
		"pipeline":                     func(v bsoncore.Value) error { pipeline = v; return nil },
		"changeStreamPreAndPostImages": r.docArg("changeStreamPreAndPostImages", &images),
		"expireAfterSeconds":           tsMod.expireHandler(),
		"timeseries":                   tsMod.timeseriesHandler(),
		"cappedSize":                   collModUnsupported("cappedSize"),
		"cappedMax":                    collModUnsupported("cappedMax"),
		"dryRun":                       collModUnsupported("dryRun"),
	})
	if err != nil {
		return nil, err
	}
	if err := validateUserWritable(r.db, coll); err != nil {
		return nil, err
	}
	others := viewOn.Type != 0 || pipeline.Type != 0 || images != nil || validation.given() || ixArg != nil
	if info, ok, err := r.collectionInfo(coll); err == nil && ok && isTimeseries(info) && others {
		return nil, mongoerr.New(mongoerr.NotImplemented, "collMod of the time-series collection %s with these options is not supported by DumboDB yet", r.ns(coll))
	}
	if tsMod.given() {
		if others {
			return nil, mongoerr.New(mongoerr.NotImplemented, "collMod of expireAfterSeconds or timeseries with other options is not supported by DumboDB yet")
		}
		return okReply(), r.collModTimeseries(coll, &tsMod)
	}
	if viewOn.Type != 0 || pipeline.Type != 0 {
		return okReply(), r.collModView(coll, viewOn, pipeline)
	}
	if images != nil || validation.given() || ixArg == nil {
		if err := r.collModOptions(coll, images, &validation); err != nil || ixArg == nil {
			return okReply(), err
		}
	}
	mod, err := parseCollModIndex(ixArg)
	if err != nil {
		return nil, err
	}
	var before, after *index.Spec
	err = r.writeExisting(func(tx *storage.Tx) error {
		info, ok := tx.Collection(coll)
		if !ok {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
		}
		specs, err := loadSpecs(info.Indexes)
		if err != nil {
			return err
		}
		i, err := mod.find(specs, r.ns(coll))
		if err != nil {
			return err
		}
		before = specs[i]
		if after, err = mod.apply(before); err != nil {
			return err
		}
		specs[i] = after
		return tx.SetIndexes(r.ctx, coll, rawsOf(specs))
	})
	if err == nil && before == nil {
		err = mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
	}
	if err != nil {
		return nil, err
	}
	return mod.reply(before, after), nil
}

// collModOptions changes the collection's options: the change-stream
// images, the validator options, or nothing (a bare collMod, which mongod
// still logs: change streams see a modify event).
func (r *request) collModOptions(coll string, images bsoncore.Document, validation *validationOptions) error {
	desc := bsoncore.NewDocumentBuilder()
	if images != nil {
		enabled, err := parseImagesOption(images)
		if err != nil {
			return err
		}
		images = bsoncore.NewDocumentBuilder().AppendBoolean("enabled", enabled).Build()
		desc.AppendDocument("changeStreamPreAndPostImages", images)
	}
	validation.describe(desc)
	return r.writeExisting(func(tx *storage.Tx) error {
		info, ok := tx.Collection(coll)
		if !ok {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
		}
		collation, _ := info.Options.Lookup("collation").DocumentOK()
		if err := validation.check(r.db, coll, collation, true); err != nil {
			return err
		}
		opts := validation.apply(info.Options)
		if images != nil {
			opts = withOption(opts, "changeStreamPreAndPostImages", images)
		}
		return tx.SetOptions(coll, opts, desc.Build())
	})
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
		return false, mongoerr.New(mongoerr.Code(40414), "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required field")
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

func collModUnsupported(field string) fieldHandler {
	return func(bsoncore.Value) error {
		return mongoerr.New(mongoerr.NotImplemented, "collMod option '%s' is not supported by DumboDB yet", field)
	}
}

func parseCollModIndex(d bsoncore.Document) (*collModIndex, error) {
	m := &collModIndex{}
	els, err := d.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	for _, el := range els {
		v := el.Value()
		switch el.Key() {
		case "keyPattern":
			kp, ok := v.DocumentOK()
			if !ok {
				return nil, typeMismatch("collMod", "index.keyPattern", v, "object")
			}
			m.keyPattern = kp
		case "name":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, typeMismatch("collMod", "index.name", v, "string")
			}
			m.name = s
		case "hidden":
			b, ok := v.BooleanOK()
			if !ok {
				return nil, typeMismatch("collMod", "index.hidden", v, "bool")
			}
			m.hidden = &b
		case "expireAfterSeconds":
			m.expire = v
		case "unique", "prepareUnique", "forceNonUnique":
			return nil, mongoerr.New(mongoerr.NotImplemented, "collMod index option '%s' is not supported by DumboDB yet", el.Key())
		default:
			return nil, mongoerr.New(mongoerr.Code(40415), "BSON field 'collMod.index.%s' is an unknown field.", el.Key())
		}
	}
	switch {
	case (m.keyPattern == nil) == (m.name == ""):
		return nil, mongoerr.New(mongoerr.InvalidOptions, "must specify either index name or key pattern")
	case m.hidden == nil && m.expire.Type == 0:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds or hidden field")
	}
	return m, nil
}

// find returns the position of the index the argument names.
func (m *collModIndex) find(specs []*index.Spec, ns string) (int, error) {
	var probe *index.Spec
	if m.keyPattern != nil {
		p, err := index.ParseSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", m.keyPattern).Build(), nil)
		if err != nil {
			return 0, err
		}
		if p.IsID() {
			return 0, mongoerr.New(mongoerr.BadValue, "cannot modify the _id index")
		}
		probe = p
	}
	if m.name == index.IDIndexName {
		return 0, mongoerr.New(mongoerr.BadValue, "cannot modify the _id index")
	}
	found := -1
	for i, s := range specs {
		if (probe != nil && s.SameKey(probe)) || (probe == nil && s.Name == m.name) {
			if found >= 0 {
				return 0, mongoerr.New(mongoerr.Code(276), "index keyPattern %s matches more than one index", index.ShellDoc(m.keyPattern))
			}
			found = i
		}
	}
	if found < 0 {
		what := m.name
		if probe != nil {
			what = index.ShellDoc(m.keyPattern)
		}
		return 0, mongoerr.New(mongoerr.IndexNotFound, "cannot find index %s for ns %s", what, ns)
	}
	return found, nil
}

// apply returns s with the argument's options, validated as createIndexes
// validates them.
func (m *collModIndex) apply(s *index.Spec) (*index.Spec, error) {
	b := bsoncore.NewDocumentBuilder()
	els, _ := s.Raw.Elements()
	for _, el := range els {
		switch el.Key() {
		case "hidden":
			if m.hidden != nil {
				continue
			}
		case "expireAfterSeconds":
			if m.expire.Type != 0 {
				continue
			}
		}
		b.AppendValue(el.Key(), el.Value())
	}
	if m.hidden != nil && *m.hidden {
		b.AppendBoolean("hidden", true)
	}
	if m.expire.Type != 0 {
		b.AppendValue("expireAfterSeconds", m.expire)
	}
	return index.ParseSpec(b.Build(), storage.IndexFilters)
}

// reply reports each changed option's old and new values, as mongod does.
func (m *collModIndex) reply(before, after *index.Spec) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	if m.expire.Type != 0 {
		if before.ExpireAfter >= 0 {
			b.AppendInt64("expireAfterSeconds_old", before.ExpireAfter)
		}
		b.AppendInt64("expireAfterSeconds_new", after.ExpireAfter)
	}
	if m.hidden != nil && before.Hidden != after.Hidden {
		b.AppendBoolean("hidden_old", before.Hidden).AppendBoolean("hidden_new", after.Hidden)
	}
	return b.AppendDouble("ok", 1).Build()
}

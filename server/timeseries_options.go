package server

import (
	"context"
	"errors"
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/timeseries"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Time-series collections (docs/design/timeseries.md, the bucket format in
// docs/format/timeseries.md): create's timeseries option, parsed and
// checked as mongod 8's IDL and timeseries_options.cpp do.

// bucketsPrefix names a time-series collection's bucket collection.
const bucketsPrefix = "system.buckets."

// maxBucketSpanSeconds is the IDL's upper bound of bucketMaxSpanSeconds and
// bucketRoundingSeconds (one year).
const maxBucketSpanSeconds = 31536000

// tsOptions are a time-series collection's options.
type tsOptions struct {
	timeField, metaField string // metaField "": none
	granularity          string // "": custom bucketing
	maxSpan, rounding    int64  // seconds
}

// granularitySeconds are each granularity's bucketMaxSpanSeconds and
// rounding seconds (mongod's getMaxSpanSecondsFromGranularity and
// getBucketRoundingSecondsFromGranularity).
var granularitySeconds = map[string][2]int64{
	"seconds": {3600, 60},
	"minutes": {86400, 3600},
	"hours":   {2592000, 86400},
}

// parseTimeseries reads create's timeseries option.
func parseTimeseries(v bsoncore.Value) (tsOptions, error) {
	var o tsOptions
	d, ok := v.DocumentOK()
	if !ok {
		return o, typeMismatch("create", "timeseries", v, "object")
	}
	var hasTime, hasMeta bool
	var span, rounding int64
	err := value.EachField(d, func(k string, fv bsoncore.Value) error {
		var err error
		switch k {
		case "timeField":
			hasTime = true
			o.timeField, err = stringValue("create", "timeseries.timeField", fv)
		case "metaField":
			hasMeta = true
			o.metaField, err = stringValue("create", "timeseries.metaField", fv)
		case "granularity":
			o.granularity, err = parseGranularity("create", fv)
		case "bucketMaxSpanSeconds":
			span, err = bucketSecondsArg("create", k, fv)
		case "bucketRoundingSeconds":
			rounding, err = bucketSecondsArg("create", k, fv)
		default:
			err = unknownField("create.timeseries", k)
		}
		return err
	})
	if err != nil {
		return o, err
	}
	if !hasTime {
		return o, mongoerr.New(mongoerr.Location40414, "BSON field 'create.timeseries.timeField' is missing but a required field")
	}
	if err := o.checkFields(hasMeta); err != nil {
		return o, err
	}
	return o, o.setBucketing(span, rounding)
}

// parseGranularity reads the granularity enumeration of cmd's
// timeseries.
func parseGranularity(cmd string, v bsoncore.Value) (string, error) {
	s, err := stringValue(cmd, "timeseries.granularity", v)
	if err != nil {
		return "", err
	}
	if _, ok := granularitySeconds[s]; !ok {
		return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s.timeseries.granularity' is not a valid value.", s, cmd)
	}
	return s, nil
}

// bucketSecondsArg reads bucketMaxSpanSeconds or bucketRoundingSeconds of
// cmd's timeseries: a safeInt from 1 to a year.
func bucketSecondsArg(cmd, field string, v bsoncore.Value) (int64, error) {
	if !value.IsNumber(v) {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.timeseries.%s' is the wrong type '%s', expected types '[long, int, decimal, double]'",
			cmd, field, value.TypeName(v.Type))
	}
	n := int64(value.ToFloat(v)) // safeInt: a number, truncated
	if n < 1 {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s.timeseries.%s' value must be >= 1, actual value '%d'", cmd, field, n)
	}
	if n > maxBucketSpanSeconds {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s.timeseries.%s' value must be <= %d, actual value '%d'", cmd, field, maxBucketSpanSeconds, n)
	}
	return n, nil
}

// checkFields refuses the time and meta field names mongod refuses.
func (o tsOptions) checkFields(hasMeta bool) error {
	if err := tsFieldName("timeField", o.timeField); err != nil {
		return err
	}
	if !hasMeta {
		return nil
	}
	if err := tsFieldName("metaField", o.metaField); err != nil {
		return err
	}
	if o.metaField == "_id" {
		return mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be \"_id\"")
	}
	if o.metaField == o.timeField {
		return mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be the same as 'timeField'")
	}
	return nil
}

// tsFieldName refuses a time or meta field that is not a plain top-level
// field name.
func tsFieldName(option, name string) error {
	switch {
	case name == "":
		return mongoerr.New(mongoerr.BadValue, "'%s' cannot be empty", option)
	case strings.HasPrefix(name, "$"):
		return mongoerr.New(mongoerr.BadValue, "'%s' cannot start with '$'", option)
	case strings.Contains(name, "."):
		return mongoerr.New(mongoerr.InvalidOptions, "'%s' must be a top-level field and not contain a '.'", option)
	}
	return nil
}

// setBucketing applies mongod's rules for granularity and the bucketing
// seconds (checkBucketingParameters), setting the defaults.
func (o *tsOptions) setBucketing(span, rounding int64) error {
	if o.granularity != "" {
		secs := granularitySeconds[o.granularity]
		if span != 0 && span != secs[0] {
			return mongoerr.New(mongoerr.InvalidOptions, "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default of %d for the provided granularity", secs[0])
		}
		if rounding != 0 {
			return mongoerr.New(mongoerr.InvalidOptions, "Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity parameter")
		}
		o.maxSpan, o.rounding = secs[0], secs[1]
		return nil
	}
	if span != 0 || rounding != 0 {
		if span != rounding {
			return mongoerr.New(mongoerr.InvalidOptions, "Time-series 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'")
		}
		o.maxSpan, o.rounding = span, rounding
		return nil
	}
	o.granularity = "seconds"
	o.maxSpan, o.rounding = granularitySeconds["seconds"][0], granularitySeconds["seconds"][1]
	return nil
}

// spec is what the buckets' layout depends on.
func (o tsOptions) spec() timeseries.Spec {
	return timeseries.Spec{TimeField: o.timeField, MetaField: o.metaField, MaxSpan: o.maxSpan, Rounding: o.rounding}
}

// secondsOf is a time in ms as whole seconds, rounded towards the past
// (as a bucket _id's time is).
func secondsOf(ms int64) int64 {
	s := ms / 1000
	if ms%1000 < 0 {
		s--
	}
	return s
}

// doc is the options as mongod lists them (and DumboDB stores them).
func (o tsOptions) doc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("timeField", o.timeField)
	if o.metaField != "" {
		b.AppendString("metaField", o.metaField)
	}
	if o.granularity != "" {
		b.AppendString("granularity", o.granularity)
	} else {
		b.AppendInt32("bucketRoundingSeconds", int32(o.rounding))
	}
	return b.AppendInt32("bucketMaxSpanSeconds", int32(o.maxSpan)).Build()
}

// timeseriesOf reads a catalog entry's time-series options; false when it
// is not a time-series collection (nor its bucket collection).
func timeseriesOf(info storage.CollectionInfo) (tsOptions, bool) {
	s, ok := timeseries.SpecOf(info.Options)
	if !ok {
		return tsOptions{}, false
	}
	o := tsOptions{timeField: s.TimeField, metaField: s.MetaField, maxSpan: s.MaxSpan, rounding: s.Rounding}
	o.granularity, _ = info.Options.Lookup("timeseries", "granularity").StringValueOK()
	return o, true
}

// isTimeseries reports whether info is a time-series collection (not its
// bucket collection).
func isTimeseries(info storage.CollectionInfo) bool {
	_, ok := timeseriesOf(info)
	return ok && !strings.HasPrefix(info.Name, bucketsPrefix)
}

// createTimeseries makes a time-series collection: its bucket collection
// and its own catalog entry, in one write.
func (r *request) createTimeseries(name string, o tsOptions, expire bsoncore.Value) error {
	if strings.HasPrefix(name, bucketsPrefix) {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid collection name: %s", name)
	}
	if r.txn != nil {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create a time-series collection in a multi-document transaction.")
	}
	own, err := o.entryOptions(expire)
	if err != nil {
		return err
	}
	return r.write(func(tx *storage.Tx) error {
		if _, exists := tx.Collection(name); exists {
			return storage.ErrNamespaceExists
		}
		return createTimeseriesIn(r.ctx, tx, name, o, own)
	})
}

// entryOptions are the time-series collection's own catalog options.
func (o tsOptions) entryOptions(expire bsoncore.Value) (bsoncore.Document, error) {
	opts := bsoncore.NewDocumentBuilder().AppendDocument("timeseries", o.doc())
	if expire.Type != 0 {
		if !value.IsNumber(expire) {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.expireAfterSeconds' is the wrong type '%s', expected types '[long, int, decimal, double]'", value.TypeName(expire.Type))
		}
		n, ok := value.AsInt64(expire)
		if !ok || n < 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be a non-negative whole number of seconds, got %s", value.Format(expire))
		}
		opts.AppendInt64("expireAfterSeconds", n)
	}
	return opts.Build(), nil
}

// createTimeseriesIn makes the two catalog entries in tx, own being the
// collection's options, and mongod's default index.
func createTimeseriesIn(ctx context.Context, tx *storage.Tx, name string, o tsOptions, own bsoncore.Document) error {
	ix, err := o.defaultIndex()
	if err != nil {
		return err
	}
	buckets := bsoncore.NewDocumentBuilder().AppendDocument("timeseries", o.doc()).Build()
	if _, err := tx.CreateCollection(ctx, bucketsPrefix+name, buckets); err != nil {
		return err
	}
	if ix != nil {
		if err := tx.SetIndexes(ctx, bucketsPrefix+name, []bsoncore.Document{ix}); err != nil {
			return err
		}
	}
	_, err = tx.CreateCollection(ctx, name, own)
	return err
}

// tsCreateOptions are the create options a time-series collection may
// have besides timeseries; DumboDB refuses the others (a view's, a
// validator, clustering, a collation) rather than ignore them.
var tsCreateOptions = map[string]bool{"expireAfterSeconds": true}

// createTimeseriesReply is create's answer for a time-series collection;
// opts are create's other stored options, viewOrValidator whether a view
// or a validator was asked for as well.
func (r *request) createTimeseriesReply(coll string, o tsOptions, opts bsoncore.Document, viewOrValidator bool) (bsoncore.Document, error) {
	if viewOrValidator {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "A time-series collection cannot be a view or have a validator")
	}
	els, _ := opts.Elements()
	for _, el := range els {
		if !tsCreateOptions[el.Key()] {
			return nil, mongoerr.New(mongoerr.NotImplemented, "create option '%s' with 'timeseries' is not supported by DumboDB yet", el.Key())
		}
	}
	err := r.createTimeseries(coll, o, opts.Lookup("expireAfterSeconds"))
	if errors.Is(err, storage.ErrNamespaceExists) {
		return nil, mongoerr.New(mongoerr.NamespaceExists, "Collection %s already exists.", r.ns(coll))
	}
	if err != nil {
		return nil, err
	}
	return okReply(), nil
}

package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Secondary indexes of a time-series collection, as mongod 8 makes them:
// on the bucket collection, with the key translated to the buckets'
// fields (the meta field to meta, a measurement field or the time field
// to its control.min and control.max), and listed back in the user's
// terms. A collection with a metaField gets mongod's default index on
// {<metaField>: 1, <timeField>: 1}.

// tsIndexOptions are the index options DumboDB carries over to a
// time-series collection's bucket index; the others are refused.
var tsIndexOptions = map[string]bool{"v": true, "key": true, "name": true, "hidden": true, "sparse": true, "background": true}

// bucketIndexSpec translates a createIndexes spec of the time-series
// collection to its bucket collection's.
func (o tsOptions) bucketIndexSpec(spec bsoncore.Document) (bsoncore.Document, error) {
	out := bsoncore.NewDocumentBuilder()
	els, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%v", err)
	}
	for _, el := range els {
		k, v := el.Key(), el.Value()
		switch {
		case k == "unique" && isTrue(v):
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Unique indexes are not supported on time-series collections")
		case k == "key":
			key, ok := v.DocumentOK()
			if !ok {
				return nil, typeMismatch("createIndexes", "indexes.key", v, "object")
			}
			if key, err = o.bucketIndexKey(key); err != nil {
				return nil, err
			}
			out.AppendDocument(k, key)
		case k == "unique" || tsIndexOptions[k]:
			out.AppendValue(k, v)
		case k == "ns": // mongod drops a spec's ns; mongorestore sends it
		default:
			return nil, mongoerr.New(mongoerr.NotImplemented, "index option '%s' on a time-series collection is not supported by DumboDB yet", k)
		}
	}
	return out.Build(), nil
}

func isTrue(v bsoncore.Value) bool {
	b, _ := asBool(v)
	return b
}

// bucketIndexKey translates a key pattern: the meta field (or a path in
// it) to meta, any other field to the bounds of its values in a bucket,
// ascending min then max (descending max then min), as mongod does.
func (o tsOptions) bucketIndexKey(key bsoncore.Document) (bsoncore.Document, error) {
	out := bsoncore.NewDocumentBuilder()
	els, _ := key.Elements()
	for _, el := range els {
		k, v := el.Key(), el.Value()
		if rest, ok := o.metaPath(k); ok {
			out.AppendValue("meta"+rest, v)
			continue
		}
		isNum := value.IsNumber(v)
		d := 0.0
		if isNum {
			d = value.ToFloat(v)
		}
		if !isNum || d == 0 {
			return nil, mongoerr.New(mongoerr.NotImplemented, "a '%s' index of the measurement field '%s' of a time-series collection is not supported by DumboDB yet", value.Format(v), k)
		}
		first, second := "control.min.", "control.max."
		if d < 0 {
			first, second = second, first
		}
		out.AppendValue(first+k, v).AppendValue(second+k, v)
	}
	return out.Build(), nil
}

// metaPath is the part of path after the meta field ("" or ".sub"); false
// when path is not in the meta field.
func (o tsOptions) metaPath(path string) (string, bool) {
	if o.metaField == "" {
		return "", false
	}
	if path == o.metaField {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, o.metaField+".")
	return "." + rest, ok
}

// userIndexSpec is a bucket index's spec as listIndexes of the
// time-series collection shows it: the key in the measurements' terms.
func (o tsOptions) userIndexSpec(raw bsoncore.Document) bsoncore.Document {
	out := bsoncore.NewDocumentBuilder()
	els, _ := raw.Elements()
	for _, el := range els {
		if el.Key() != "key" {
			out.AppendValue(el.Key(), el.Value())
			continue
		}
		out.AppendDocument("key", o.userIndexKey(el.Value().Document()))
	}
	return out.Build()
}

// userIndexKey undoes bucketIndexKey.
func (o tsOptions) userIndexKey(key bsoncore.Document) bsoncore.Document {
	out := bsoncore.NewDocumentBuilder()
	seen := map[string]bool{}
	els, _ := key.Elements()
	for _, el := range els {
		k := el.Key()
		switch {
		case k == "meta" || strings.HasPrefix(k, "meta."):
			k = o.metaField + strings.TrimPrefix(k, "meta")
		case strings.HasPrefix(k, "control.min.") || strings.HasPrefix(k, "control.max."):
			k = k[len("control.min."):]
		}
		if !seen[k] {
			seen[k] = true
			out.AppendValue(k, el.Value())
		}
	}
	return out.Build()
}

// defaultIndex is mongod's index of a new time-series collection with a
// metaField, as its bucket collection holds it; nil without a metaField.
func (o tsOptions) defaultIndex() (bsoncore.Document, error) {
	if o.metaField == "" {
		return nil, nil
	}
	key := bsoncore.NewDocumentBuilder().AppendInt32(o.metaField, 1).AppendInt32(o.timeField, 1).Build()
	spec, err := o.bucketIndexSpec(bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", key).
		AppendString("name", o.metaField+"_1_"+o.timeField+"_1").Build())
	if err != nil {
		return nil, err
	}
	s, err := parseIndexSpec(spec, nil)
	if err != nil {
		return nil, err
	}
	return s.Raw, nil
}

// timeseriesIndexes runs createIndexes or dropIndexes (handler) of a
// time-series collection on its bucket collection, the argument arg (the
// specs or the index to drop) translated; ok is false when coll is not a
// time-series collection.
func (r *request) timeseriesIndexes(handler func(*request) (bsoncore.Document, error), arg string) (reply bsoncore.Document, ok bool, err error) {
	coll, err := r.collectionArg()
	if err != nil {
		return nil, false, nil // the handler answers it
	}
	info, found, err := r.collectionInfo(coll)
	if err != nil || !found || !isTimeseries(info) {
		return nil, false, err
	}
	o, _ := timeseriesOf(info)
	cmd, err := o.bucketIndexCommand(r.cmd, bucketsPrefix+coll, arg)
	if err != nil {
		return nil, true, err
	}
	sub := *r
	sub.cmd = cmd
	reply, err = handler(&sub)
	return reply, true, err
}

// bucketIndexCommand is cmd on the bucket collection buckets, its arg
// translated: createIndexes' specs, or dropIndexes' key pattern.
func (o tsOptions) bucketIndexCommand(cmd bsoncore.Document, buckets, arg string) (bsoncore.Document, error) {
	els, _ := cmd.Elements()
	b := bsoncore.NewDocumentBuilder().AppendString(els[0].Key(), buckets)
	for _, el := range els[1:] {
		v := el.Value()
		if el.Key() != arg {
			b.AppendValue(el.Key(), v)
			continue
		}
		t, err := o.translateIndexArg(v)
		if err != nil {
			return nil, err
		}
		b.AppendValue(el.Key(), t)
	}
	return b.Build(), nil
}

// translateIndexArg translates an array of specs or a key pattern; other
// values (names) are left as they are.
func (o tsOptions) translateIndexArg(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeArray:
		vals, _ := bsoncore.Array(v.Data).Values()
		arr := bsoncore.NewArrayBuilder()
		for _, sv := range vals {
			spec, ok := sv.DocumentOK()
			if !ok {
				arr.AppendValue(sv) // a name, or a wrong type the handler refuses
				continue
			}
			t, err := o.bucketIndexSpec(spec)
			if err != nil {
				return v, err
			}
			arr.AppendDocument(t)
		}
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}, nil
	case bsoncore.TypeEmbeddedDocument:
		k, err := o.bucketIndexKey(v.Document())
		return value.DocValue(k), err
	}
	return v, nil
}

// listTimeseriesIndexes answers listIndexes of a time-series collection:
// its bucket indexes in the user's terms, and no _id index (the buckets
// are clustered by _id, which is not the measurements').
func (r *request) listTimeseriesIndexes(snap *storage.Snapshot, coll string, o tsOptions, batchSize int) (bsoncore.Document, error) {
	buckets, _ := snap.Collection(bucketsPrefix + coll)
	docs := make([]bsoncore.Document, 0, len(buckets.Indexes))
	for _, raw := range buckets.Indexes {
		docs = append(docs, o.userIndexSpec(raw))
	}
	return r.startCursor(r.ns(coll), &sliceSource{docs: docs}, batchSize, false, false)
}

// timeseriesHint is a read's hint on a time-series collection (view is
// its resolved stages) as a hint on its buckets: a key pattern in the
// measurements' terms is translated as createIndexes translated it; an
// index name is the same.
func timeseriesHint(view []bsoncore.Document, hint bsoncore.Value) bsoncore.Value {
	key, isKey := hint.DocumentOK()
	if !isKey || len(view) != 1 {
		return hint
	}
	o, ok := unpackOptions(view[0])
	if !ok {
		return hint
	}
	if len(key) == 5 || strings.HasPrefix(value.FirstKey(key), "$") { // {} or $natural
		return hint
	}
	t, err := o.bucketIndexKey(key)
	if err != nil {
		return hint // no such index can exist: the planner says so
	}
	return value.DocValue(t)
}

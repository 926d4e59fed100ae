package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Restoring a time-series collection as mongorestore does: it creates
// the collection from the dumped options, then inserts the dumped
// buckets into system.buckets.<name> (docs/format/timeseries.md, "A
// bucket"). That is the one write to a system collection allowed, and
// each document must be a bucket the collection's reads can unpack.

// bucketsTarget returns the time-series options of the collection whose
// buckets coll is, when coll is system.buckets.<name> of an existing
// time-series collection; ok is false otherwise.
func (r *request) bucketsTarget(coll string) (tsOptions, bool, error) {
	name, ok := strings.CutPrefix(coll, bucketsPrefix)
	if !ok {
		return tsOptions{}, false, nil
	}
	info, exists, err := r.collectionInfo(name)
	if err != nil || !exists || !isTimeseries(info) {
		return tsOptions{}, false, err
	}
	o, ok := timeseriesOf(info)
	return o, ok, nil
}

// checkBucket refuses a document that is not a bucket of collection
// options o, as mongod's bucket collection validator does.
func checkBucket(doc bsoncore.Document, o tsOptions) error {
	if doc.Lookup("_id").Type != bsoncore.TypeObjectID {
		return bucketInvalid("its _id is not an ObjectId")
	}
	control, ok := doc.Lookup("control").DocumentOK()
	if !ok {
		return bucketInvalid("it has no control document")
	}
	switch v := control.Lookup("version"); {
	case v.Type == bsoncore.TypeInt32 && v.Int32() == 2, v.Type == bsoncore.TypeInt64 && v.Int64() == 2:
		return mongoerr.New(mongoerr.NotImplemented, "compressed time-series buckets (control.version 2) are not supported by DumboDB yet: dump the collection from a view of it (an aggregate to a plain collection) instead")
	case !(v.Type == bsoncore.TypeInt32 && v.Int32() == 1) && !(v.Type == bsoncore.TypeInt64 && v.Int64() == 1):
		return bucketInvalid("control.version is not 1")
	}
	for _, bound := range []string{"min", "max"} {
		d, ok := control.Lookup(bound).DocumentOK()
		if !ok || d.Lookup(o.timeField).Type != bsoncore.TypeDateTime {
			return bucketInvalid("control." + bound + "." + o.timeField + " is not a date")
		}
	}
	data, ok := doc.Lookup("data").DocumentOK()
	if !ok {
		return bucketInvalid("it has no data document")
	}
	if _, ok := data.Lookup(o.timeField).DocumentOK(); !ok {
		return bucketInvalid("data." + o.timeField + " is not a document")
	}
	if o.metaField == "" && doc.Lookup("meta").Type != 0 {
		return bucketInvalid("it has meta, and the collection has no metaField")
	}
	return nil
}

func bucketInvalid(why string) error {
	return mongoerr.New(mongoerr.DocumentValidationFailure, "Document failed validation: not a time-series bucket: %s", why)
}

package server

import (
	"errors"
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A time-series collection in the catalog commands: listCollections lists
// it with type "timeseries" and its bucket collection as mongod 8 does,
// drop drops both.

// timeseriesEntry is a time-series collection's listCollections entry.
func timeseriesEntry(ci storage.CollectionInfo, nameOnly bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("name", ci.Name).AppendString("type", "timeseries")
	if nameOnly {
		return b.Build()
	}
	return b.AppendDocument("options", ci.Options).
		AppendDocument("info", bsoncore.NewDocumentBuilder().AppendBoolean("readOnly", false).Build()).Build()
}

// bucketsEntry is a bucket collection's listCollections entry: mongod
// lists it clustered by _id, with the collection's TTL; expire is the
// time-series collection's expireAfterSeconds (Type 0: none). mongod also
// lists a $jsonSchema validator of the bucket shape, which DumboDB does
// not keep (its inserts write only well-formed buckets).
func bucketsEntry(ci storage.CollectionInfo, expire bsoncore.Value, nameOnly bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("name", ci.Name).AppendString("type", "collection")
	if nameOnly {
		return b.Build()
	}
	opts := bsoncore.NewDocumentBuilder().AppendBoolean("clusteredIndex", true)
	if expire.Type != 0 {
		opts.AppendValue("expireAfterSeconds", expire)
	}
	opts.AppendValue("timeseries", ci.Options.Lookup("timeseries"))
	info := bsoncore.NewDocumentBuilder().AppendBoolean("readOnly", false).AppendBinary("uuid", 4, ci.UUID[:]).Build()
	return b.AppendDocument("options", opts.Build()).AppendDocument("info", info).Build()
}

// catalogEntry is the listCollections entry of a time-series collection
// or of its bucket collection; false for other entries.
func timeseriesCatalogEntry(snap storage.Reader, ci storage.CollectionInfo) (func(bool) bsoncore.Document, bool) {
	if isTimeseries(ci) {
		return func(n bool) bsoncore.Document { return timeseriesEntry(ci, n) }, true
	}
	name, ok := strings.CutPrefix(ci.Name, bucketsPrefix)
	if _, ts := timeseriesOf(ci); !ok || !ts {
		return nil, false
	}
	var expire bsoncore.Value
	if owner, found := snap.Collection(name); found {
		expire = owner.Options.Lookup("expireAfterSeconds")
	}
	return func(n bool) bsoncore.Document { return bucketsEntry(ci, expire, n) }, true
}

// dropTimeseries drops the other half of a time-series collection with
// the one drop names: its bucket collection with it, or it with its bucket
// collection (which leaves nothing it could read or write). A missing half
// is no error: drop of the pair is idempotent.
func dropTimeseries(tx *storage.Tx, coll string) error {
	ts, other := coll, bucketsPrefix+coll
	if owner, ok := strings.CutPrefix(coll, bucketsPrefix); ok {
		ts, other = owner, owner
	}
	if info, found := tx.Collection(ts); !found || !isTimeseries(info) {
		return nil // not a time-series collection's half
	}
	err := tx.DropCollection(other)
	if errors.Is(err, storage.ErrNamespaceNotFound) {
		return nil
	}
	return err
}

// refuseTimeseriesRename refuses, as mongod 8 does, a rename of a
// time-series collection (a view: CommandNotSupportedOnView), of its
// bucket collection or onto a bucket namespace (IllegalOperation); and a
// rename onto a time-series collection, which would leave its buckets
// behind (NotImplemented).
func refuseTimeseriesRename(rd storage.Reader, ns func(string) string, from, to string) error {
	if info, ok := rd.Collection(from); ok && isTimeseries(info) {
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s is a view, not a collection", ns(from))
	}
	if strings.HasPrefix(from, bucketsPrefix) {
		return mongoerr.New(mongoerr.IllegalOperation, "Renaming a timeseries collection is not allowed")
	}
	if strings.HasPrefix(to, bucketsPrefix) {
		return mongoerr.New(mongoerr.IllegalOperation, "Renaming to a bucket namespace is not allowed")
	}
	if info, ok := rd.Collection(to); ok && isTimeseries(info) {
		return mongoerr.New(mongoerr.NotImplemented, "renameCollection onto the time-series collection %s is not supported by DumboDB yet", ns(to))
	}
	return nil
}

// refuseTimeseriesTxn refuses a write to a time-series collection in a
// multi-document transaction, as mongod does.
func (r *request) refuseTimeseriesTxn(coll string) error {
	if r.txn == nil {
		return nil
	}
	return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot %s the time-series collection %s in a multi-document transaction", r.name, r.ns(coll))
}

// refuseTimeseriesStream refuses a change stream on a time-series
// collection, as mongod 8 does (it is a view; its writes are the events of
// system.buckets.<name>).
func (r *request) refuseTimeseriesStream(coll string) error {
	if coll == "" {
		return nil
	}
	info, ok, err := r.collectionInfo(coll)
	if err != nil || !ok || !isTimeseries(info) {
		return err
	}
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s is a view, not a collection", r.ns(coll))
}

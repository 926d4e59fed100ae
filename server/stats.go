package server

import (
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Collection and database figures (collStats, $collStats' storageStats,
// dbStats): what the stored trees hold, measured from the snapshot.
//
// Documents are clustered by _id: the document map is keyed by the _id
// index's keys, so it is both the collection and its _id index. The _id
// index is reported as the bytes of those keys, and the collection's
// storage as the rest of the map, so that storageSize plus totalIndexSize
// is what the trees hold, each byte counted once.

// collStats are one collection's figures.
type collStats struct {
	count, dataSize int64 // documents, and their BSON bytes
	storageSize     int64 // the document map's bytes but its keys
	idIndex         int64 // the _id keys' bytes: the _id index
	// indexSizes are the other indexes'; indexSize is every index's, the
	// _id index included.
	indexSizes []storage.IndexSize
	indexSize  int64
}

// collectionStats measures a collection: its documents' BSON bytes and
// _id keys (a scan: mongod keeps counters, DumboDB does not yet), its
// stored tree bytes and its indexes'.
func (r *request) collectionStats(snap *storage.Snapshot, coll string) (collStats, error) {
	var st collStats
	it, err := snap.Scan(r.ctx, coll)
	if err != nil {
		return st, err
	}
	var key []byte
	measure := func(doc bsoncore.Document) bool {
		st.count++
		st.dataSize += int64(len(doc))
		key = index.EncodeID(key[:0], doc.Lookup("_id"))
		st.idIndex += int64(len(key))
		return false // measured in place: nothing is copied
	}
	if _, err := it.NextWhere(r.ctx, measure); !errors.Is(err, io.EOF) {
		return st, err
	}
	tree, err := snap.CollectionBytes(r.ctx, coll)
	if err != nil {
		return st, err
	}
	st.storageSize = max(tree-st.idIndex, 0)
	if st.indexSizes, err = snap.IndexSizes(r.ctx, coll); err != nil {
		return st, err
	}
	st.indexSize = st.idIndex
	for _, sz := range st.indexSizes {
		st.indexSize += sz.Bytes
	}
	return st, nil
}

// appendStorageStats adds a collection's storage figures, sizes divided
// by scale, in mongod's order and types: collStats shows them after ns,
// $collStats as its storageStats.
func appendStorageStats(b *bsoncore.DocumentBuilder, info storage.CollectionInfo, st collStats, scale int64) {
	b.AppendValue("size", value.Count(st.dataSize/scale)).
		AppendValue("count", value.Count(st.count))
	if st.count > 0 {
		b.AppendValue("avgObjSize", value.Count(st.dataSize/st.count))
	}
	b.AppendInt32("numOrphanDocs", 0) // no sharding: no orphans
	b.AppendValue("storageSize", value.Count(st.storageSize/scale)).AppendValue("freeStorageSize", value.Count(0))
	appendCappedStats(b, info, scale)
	sizes := bsoncore.NewDocumentBuilder().AppendValue(index.IDIndexName, value.Count(st.idIndex/scale))
	for _, sz := range st.indexSizes {
		sizes.AppendValue(sz.Name, value.Count(sz.Bytes/scale))
	}
	b.AppendInt32("nindexes", int32(len(info.Indexes)+1)).
		AppendArray("indexBuilds", bsoncore.NewArrayBuilder().Build()). // builds finish within createIndexes
		AppendValue("totalIndexSize", value.Count(st.indexSize/scale)).
		AppendValue("totalSize", value.Count((st.storageSize+st.indexSize)/scale)).
		AppendDocument("indexSizes", sizes.Build()).
		AppendInt32("scaleFactor", int32(scale))
}

// StorageStats serves $collStats' storageStats (query.StorageStatsCatalog):
// the figures collStats shows.
func (c snapshotCatalog) StorageStats(_ context.Context, coll string, scale int64) (bsoncore.Document, error) {
	info, _ := c.snap.Collection(coll)
	st, err := c.r.collectionStats(c.snap, coll)
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder()
	appendStorageStats(b, info, st, scale)
	return b.Build(), nil
}

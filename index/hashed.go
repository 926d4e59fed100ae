package index

import (
	"crypto/md5"
	"encoding/binary"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Hashed index keys: a hashed field's key is mongod's hash of its value
// (hash version 0, seed 0), so that values, bounds and
// convertShardKeyToHashed agree with mongod's. The hash is the first 8
// bytes, little-endian, of the MD5 of the seed (int32), then for the value
// its canonical type (int32) and its bytes: a number as the int64 it
// truncates to, a document or array as each element (type, name with its
// NUL, value) and the terminating type 0, anything else as its BSON value
// bytes.

// HashValue is mongod's BSONElementHasher::hash64 of v with seed 0.
func HashValue(v bsoncore.Value) int64 {
	h := md5.New()
	var b [8]byte
	h.Write(b[:4]) // the seed, 0
	hashValue(h.Write, v)
	sum := h.Sum(nil)
	return int64(binary.LittleEndian.Uint64(sum[:8]))
}

func hashValue(write func([]byte) (int, error), v bsoncore.Value) {
	writeType(write, v.Type)
	hashBody(write, v)
}

func writeType(write func([]byte) (int, error), t bsoncore.Type) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(canonicalType(t)))
	write(b[:])
}

// hashBody hashes what follows a value's type.
func hashBody(write func([]byte) (int, error), v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		hashElements(write, v.Data)
	case bsoncore.TypeCodeWithScope:
		code, scope := v.CodeWithScope()
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(code)+1))
		write(n[:])
		write(append([]byte(code), 0))
		hashElements(write, scope)
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(safeInt64(v)))
		write(b[:])
	default:
		write(v.Data)
	}
}

// hashElements hashes a document's elements, each as its type, its name
// with the NUL and its body, then the end of the document (the EOO
// element: type 0 and nothing else).
func hashElements(write func([]byte) (int, error), doc []byte) {
	els, _ := bsoncore.Document(doc).Elements()
	for _, el := range els {
		writeType(write, el.Value().Type)
		write(append([]byte(el.Key()), 0))
		hashBody(write, el.Value())
	}
	write([]byte{0, 0, 0, 0})
}

// safeInt64 is mongod's safeNumberLong: a number truncated to int64,
// saturating at the limits, NaN as 0.
func safeInt64(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32())
	case bsoncore.TypeInt64:
		return v.Int64()
	}
	f := value.ToFloat(v)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// canonicalType is mongod's canonical type order number of a BSON type.
func canonicalType(t bsoncore.Type) int32 {
	switch t {
	case bsoncore.TypeMinKey:
		return -1
	case bsoncore.TypeUndefined:
		return 0
	case bsoncore.TypeNull:
		return 5
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return 10
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return 15
	case bsoncore.TypeEmbeddedDocument:
		return 20
	case bsoncore.TypeArray:
		return 25
	case bsoncore.TypeBinary:
		return 30
	case bsoncore.TypeObjectID:
		return 35
	case bsoncore.TypeBoolean:
		return 40
	case bsoncore.TypeDateTime:
		return 45
	case bsoncore.TypeTimestamp:
		return 47
	case bsoncore.TypeRegex:
		return 50
	case bsoncore.TypeDBPointer:
		return 55
	case bsoncore.TypeJavaScript:
		return 60
	case bsoncore.TypeCodeWithScope:
		return 65
	case bsoncore.TypeMaxKey:
		return 127
	}
	return 0
}

// hashedKeyValue is the value a hashed field stores in the index: the
// hash of the field's value (null when missing), which must not be an
// array (mongod's error 16766).
func hashedKeyValue(path string, fv fieldValues) (bsoncore.Value, error) {
	if len(fv.arrays) > 0 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location16766, "Error: hashed indexes do not currently support array values. Found array at path: %s", fv.arrays[0])
	}
	v := bsoncore.Value{Type: bsoncore.TypeNull}
	if len(fv.vals) > 0 && fv.vals[0].Type != 0 {
		v = fv.vals[0]
	}
	return HashedPoint(v), nil
}

// HashedPoint is the index value of v in a hashed field: its hash as an
// int64, which is what the planner bounds an equality on that field by.
func HashedPoint(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, HashValue(v))}
}

// Hashed reports whether a key field is hashed.
func (s *Spec) Hashed() bool {
	for _, f := range s.Fields {
		if f.Hashed {
			return true
		}
	}
	return false
}

// checkHashed allows one hashed field, as mongod does.
func checkHashed(fields []Field) error {
	n := 0
	for _, f := range fields {
		if f.Hashed {
			n++
		}
	}
	if n > 1 {
		return mongoerr.New(mongoerr.Location31303, "A maximum of one index field is allowed to be hashed but found %d", n)
	}
	return nil
}

// checkHashedOptions refuses what a hashed index cannot be: unique (a
// hash cannot guarantee it, mongod's 16764), and collated (mongod hashes
// the collation key, which DumboDB does not: refused, not ignored).
func (s *Spec) checkHashedOptions() error {
	switch {
	case !s.Hashed():
	case s.RefusesDuplicates(): // prepareUnique leads to unique
		return mongoerr.New(mongoerr.Location16764, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
	case s.coll != nil:
		return mongoerr.New(mongoerr.NotImplemented, "hashed indexes with a collation are not supported by DumboDB")
	}
	return nil
}

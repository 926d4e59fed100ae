package server

import (
	"context"
	"math"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Capped collections (docs/design/capped.md): create's capped, size and
// max, checked and stored as mongod 8 does.

// maxCappedSize is mongod's bound on size: 1 PB.
const maxCappedSize = int64(1) << 50

// cappedArgs are create's capped, size and max as given (Type 0: absent).
type cappedArgs struct {
	capped, size, max bsoncore.Value
}

func (a *cappedArgs) set(k string, v bsoncore.Value) {
	if v.Type == bsoncore.TypeNull {
		return // mongod's IDL parser takes a null field for an absent one
	}
	switch k {
	case "capped":
		a.capped = v
	case "size":
		a.size = v
	case "max":
		a.max = v
	}
}

// isCapped reports whether capped is given true (asBool's truth).
func (a *cappedArgs) isCapped() bool {
	b, _ := asBool(a.capped)
	return b
}

// options checks the arguments as mongod's create does (the IDL's types
// and bounds first, then the command's rules) and returns the options to
// store in front of the others, as mongod lists them: capped, size (rounded
// up to a multiple of 256), max. nil: not capped.
func (a *cappedArgs) options(cmd string) (bsoncore.Document, error) {
	if a.capped.Type != 0 {
		if _, ok := asBool(a.capped); !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.capped' is the wrong type '%s', expected types '[bool, long, int, decimal, double]'",
				cmd, value.TypeName(a.capped.Type))
		}
	}
	size, err := cappedNumber(cmd, "size", a.size)
	if err != nil {
		return nil, err
	}
	max, err := cappedNumber(cmd, "max", a.max)
	if err != nil {
		return nil, err
	}
	switch {
	case a.size.Type != 0 && size < 1:
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'size' value must be >= 1, actual value '%d'", size)
	case a.size.Type != 0 && size > maxCappedSize:
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'size' value must be <= %d, actual value '%d'", maxCappedSize, size)
	case a.max.Type != 0 && max >= 1<<31:
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'max' value must be < %d, actual value '%d'", int64(1)<<31, max)
	case a.isCapped() && a.size.Type == 0:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "the 'size' field is required when 'capped' is true")
	case !a.isCapped() && (a.size.Type != 0 || a.max.Type != 0):
		return nil, mongoerr.New(mongoerr.InvalidOptions, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present")
	case !a.isCapped():
		return nil, nil
	}
	b := bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).
		AppendValue("size", appendNumber(roundCappedSize(size)))
	if a.max.Type != 0 {
		b.AppendValue("max", appendNumber(adjustCappedMax(max)))
	}
	return b.Build(), nil
}

// cappedNumber reads size or max: a number (safeInt64: a double is
// truncated).
func cappedNumber(cmd, field string, v bsoncore.Value) (int64, error) {
	if v.Type == 0 {
		return 0, nil
	}
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
	default:
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[long, int, decimal, double]'",
			cmd, field, value.TypeName(v.Type))
	}
	if v.Type == bsoncore.TypeDouble {
		f := v.Double()
		if math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
			return 0, mongoerr.New(mongoerr.BadValue, "Expected field %s to have a value exactly representable as a 64-bit integer, but found %s", field, value.Format(v))
		}
		return int64(f), nil
	}
	n, ok := value.AsInt64(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.BadValue, "Expected field %s to have a value exactly representable as a 64-bit integer, but found %s", field, value.Format(v))
	}
	return n, nil
}

// roundCappedSize is mongod's adjustCappedSize: up to a multiple of 256.
func roundCappedSize(n int64) int64 { return (n + 0xff) &^ 0xff }

// adjustCappedMax is mongod's adjustCappedMaxDocs: no positive maximum
// stores 2^31-1.
func adjustCappedMax(n int64) int64 {
	if n <= 0 {
		return math.MaxInt32
	}
	return n
}

// appendNumber is mongod's BSONObjBuilder::appendNumber for a long: an
// int when it fits in 31 bits, else a long.
func appendNumber(n int64) bsoncore.Value {
	if n < 1<<30 && n > -(1<<30) {
		return value.Int32(int32(n))
	}
	return value.Int64(n)
}

// withPrefix is doc with the elements of prefix before its own.
func withPrefix(prefix, doc bsoncore.Document) bsoncore.Document {
	if prefix == nil {
		return doc
	}
	b := bsoncore.NewDocumentBuilder()
	for _, d := range []bsoncore.Document{prefix, doc} {
		els, _ := d.Elements()
		for _, el := range els {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// checkCappedWith refuses capped with the options mongod refuses it
// with: a view, a clustered collection.
func checkCappedWith(opts bsoncore.Document, viewOn bsoncore.Value) error {
	if b, _ := opts.Lookup("capped").BooleanOK(); !b {
		return nil
	}
	if viewOn.Type != 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: capped")
	}
	if _, err := opts.LookupErr("clusteredIndex"); err == nil {
		return mongoerr.New(mongoerr.Location6127800, "Clustered capped collection only available with 'enableTestCommands' server parameter")
	}
	return nil
}

// appendCappedStats adds collStats' capped, and for a capped collection
// max and maxSize (scaled, as mongod scales it).
func appendCappedStats(b *bsoncore.DocumentBuilder, info storage.CollectionInfo, scale int64) {
	b.AppendBoolean("capped", info.Capped())
	if info.Capped() {
		size, max := info.CappedLimits()
		b.AppendValue("max", value.Count(max)).AppendValue("maxSize", value.Count(size/scale))
	}
}

// Capped serves $collStats' capped figures (query.CappedCatalog).
func (c snapshotCatalog) Capped(_ context.Context, coll string) (bool, int64, int64) {
	info, ok := c.snap.Collection(coll)
	if !ok || !info.Capped() {
		return false, 0, 0
	}
	size, max := info.CappedLimits()
	return true, size, max
}

// cappedMod is collMod's cappedSize and cappedMax (Type 0: not given).
type cappedMod struct{ size, max bsoncore.Value }

func (m *cappedMod) given() bool { return m.size.Type != 0 || m.max.Type != 0 }

// apply checks the new limits as mongod 6.0+ does (cappedSize in
// [1, 1 PB], stored as given, not rounded; cappedMax below 2^31, none or
// 0 or less storing 2^31-1) and returns the options with them; the
// documents over them go at the next insert, as on mongod.
func (m *cappedMod) apply(ns string, opts bsoncore.Document) (bsoncore.Document, error) {
	size, err := cappedNumber("collMod", "cappedSize", m.size)
	if err != nil {
		return nil, err
	}
	max, err := cappedNumber("collMod", "cappedMax", m.max)
	if err != nil {
		return nil, err
	}
	switch {
	case m.size.Type != 0 && size < 1:
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'cappedSize' value must be >= 1, actual value '%d'", size)
	case m.size.Type != 0 && size > maxCappedSize:
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'cappedSize' value must be <= %d, actual value '%d'", maxCappedSize, size)
	case m.max.Type != 0 && max >= 1<<31:
		return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'cappedMax' value must be < %d, actual value '%d'", int64(1)<<31, max)
	}
	if b, _ := opts.Lookup("capped").BooleanOK(); !b {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "cappedSize and cappedMax can only be changed on a capped collection; %s is not capped", ns)
	}
	sizeV, maxV := opts.Lookup("size"), opts.Lookup("max")
	if m.size.Type != 0 {
		sizeV = appendNumber(size)
	}
	if m.max.Type != 0 {
		maxV = appendNumber(adjustCappedMax(max))
	}
	b := bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).AppendValue("size", sizeV)
	if maxV.Type != 0 {
		b.AppendValue("max", maxV)
	}
	els, _ := opts.Elements()
	for _, el := range els {
		switch el.Key() {
		case "capped", "size", "max":
		default:
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build(), nil
}

// recordIDs gives showRecordId a capped collection's record ids (nil: the
// collection is not capped, and its record id is the _id key).
func recordIDs(ctx context.Context, snap *storage.Snapshot, coll string) func([]byte) (int64, bool) {
	if info, ok := snap.Collection(coll); !ok || !info.Capped() {
		return nil
	}
	return func(idKey []byte) (int64, bool) { return snap.RecordID(ctx, coll, idKey) }
}

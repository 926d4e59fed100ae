package index

import (
	"encoding/binary"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/geo"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Geo indexes. A 2dsphere field's keys are the S2 cells of the
// geometries the document holds there (geo's KeyCells: a point's
// leaf cell, a covering for lines and polygons); a 2d field's key is a
// legacy pair's cell of the index's grid (bits, min, max). Cell ids are
// stored as int64 keys with the top bit flipped, so that key order is
// cell order and a cell's descendants are one key range. A document with
// no geometry in its geo fields has no entry (2dsphere version 2 and up,
// and 2d, are sparse on their geo fields); one with an invalid geometry
// is refused with mongod's 16755.

// Geo index kinds (the key pattern's string).
const (
	Geo2DSphere = "2dsphere"
	Geo2D       = "2d"
)

// sphereVersion is the 2dsphereIndexVersion DumboDB builds and lists:
// the key format is its own, but the semantics (sparse, nulls not
// indexed) are those of mongod's versions 2 and 3.
const sphereVersion = 3

// geoOptions are a geo index's options while its spec is read.
type geoOptions struct {
	sphereVersion *int32
	bits          *int32
	min, max      *float64
}

// GeoField returns the index's geo field, if it has one.
func (s *Spec) GeoField() (Field, bool) {
	for _, f := range s.Fields {
		if f.Geo != "" {
			return f, true
		}
	}
	return Field{}, false
}

// Grid is a 2d index's grid.
func (s *Spec) Grid() geo.Grid {
	g := geo.DefaultGrid
	if s.geo.bits != nil {
		g.Bits = int(*s.geo.bits)
	}
	if s.geo.min != nil {
		g.Min = *s.geo.min
	}
	if s.geo.max != nil {
		g.Max = *s.geo.max
	}
	return g
}

// parseGeoOption reads 2dsphereIndexVersion, bits, min and max.
func (s *Spec) parseGeoOption(key string, v bsoncore.Value) error {
	if !value.IsNumber(v) {
		return mongoerr.New(mongoerr.TypeMismatch, "The field '%s' must be a number, not %s", key, v.Type)
	}
	f := value.ToFloat(v)
	switch key {
	case "2dsphereIndexVersion":
		n := int32(f)
		s.geo.sphereVersion = &n
	case "bits":
		n := int32(f)
		s.geo.bits = &n
	case "min":
		s.geo.min = &f
	case "max":
		s.geo.max = &f
	}
	return nil
}

// checkGeo checks a geo index's fields and options as mongod does, and
// refuses what DumboDB does not build (2dsphere version 1).
func (s *Spec) checkGeo() error {
	f, ok := s.GeoField()
	if !ok {
		switch {
		case s.geo.sphereVersion != nil:
			return mongoerr.New(codeInvalidIndexSpecOpt, "The field '2dsphereIndexVersion' is valid only for 2dsphere indexes")
		case s.geo.bits != nil || s.geo.min != nil || s.geo.max != nil:
			return mongoerr.New(codeInvalidIndexSpecOpt, "The fields 'bits', 'min' and 'max' are valid only for 2d indexes")
		}
		return nil
	}
	n := 0
	for _, g := range s.Fields {
		switch {
		case g.Geo != "":
			n++
		case g.Hashed:
			return mongoerr.New(codeCannotCreateIndex, "Can't use more than one index plugin for a single index.")
		}
	}
	_, wild := s.Wildcard()
	switch {
	case s.tp != nil || wild:
		return mongoerr.New(codeCannotCreateIndex, "Can't use more than one index plugin for a single index.")
	case n > 1:
		return mongoerr.New(mongoerr.NotImplemented, "indexes with more than one geo field are not supported by DumboDB")
	case f.Geo == Geo2D && s.Fields[0].Geo != Geo2D:
		return mongoerr.New(codeCannotCreateIndex, "2d has to be first in index")
	case s.RefusesDuplicates():
		return mongoerr.New(mongoerr.NotImplemented, "unique %s indexes are not supported by DumboDB", f.Geo)
	}
	if f.Geo == Geo2DSphere {
		return s.checkSphereOptions()
	}
	return s.checkGridOptions()
}

func (s *Spec) checkSphereOptions() error {
	if s.geo.bits != nil || s.geo.min != nil || s.geo.max != nil {
		return mongoerr.New(codeInvalidIndexSpecOpt, "The fields 'bits', 'min' and 'max' are valid only for 2d indexes")
	}
	if v := s.geo.sphereVersion; v != nil {
		switch *v {
		case 2, 3:
		case 1:
			return mongoerr.New(mongoerr.NotImplemented, "index option '2dsphereIndexVersion' 1 is not supported by DumboDB (2, 3)")
		default:
			return mongoerr.New(codeCannotCreateIndex, "unsupported geo index version { 2dsphereIndexVersion : %d }, only support versions: [1,2,3]", *v)
		}
	}
	return nil
}

func (s *Spec) checkGridOptions() error {
	if s.geo.sphereVersion != nil {
		return mongoerr.New(codeInvalidIndexSpecOpt, "The field '2dsphereIndexVersion' is valid only for 2dsphere indexes")
	}
	g := s.Grid()
	if g.Bits < 1 || g.Bits > 32 {
		return mongoerr.New(codeCannotCreateIndex, "bits in geo index must be between 1 and 32")
	}
	if !(g.Max > g.Min) {
		return mongoerr.New(codeCannotCreateIndex, "region for hash must be valid and have positive area, min: %s max: %s", ShellValue(value.Double(g.Min)), ShellValue(value.Double(g.Max)))
	}
	return nil
}

// geoNormalised adds 2dsphereIndexVersion to a 2dsphere spec that lacks
// it, as mongod lists it.
func (s *Spec) geoNormalised(b *bsoncore.DocumentBuilder) {
	if f, ok := s.GeoField(); ok && f.Geo == Geo2DSphere && s.geo.sphereVersion == nil {
		b.AppendInt32("2dsphereIndexVersion", sphereVersion)
	}
}

// FlipCell is a cell id as a key value: an int64 ordered as the id.
func FlipCell(id uint64) bsoncore.Value {
	return value.Int64(int64(id ^ 1<<63))
}

// geoKeyValues is the key values of one document's geo field (nil when
// the field holds no geometry) and whether any is not a point.
func (s *Spec) geoKeyValues(doc bsoncore.Document, f Field) (out []bsoncore.Value, nonPoint bool, err error) {
	for _, v := range geoFieldValues(doc, f.Path) {
		shapes, err := geo.ParseStored(v)
		if err != nil {
			return nil, false, geoKeyError(doc, err)
		}
		for _, sh := range shapes {
			if f.Geo == Geo2D {
				if sh.Flat == nil {
					return nil, false, geoKeyError(doc, mongoerr.New(mongoerr.BadValue, "geo values must be 'legacy coordinate pairs' for 2d indexes"))
				}
				k, err := s.Grid().Key(*sh.Flat)
				if err != nil {
					return nil, false, err
				}
				out = append(out, FlipCell(k))
				continue
			}
			if sh.NoSphere {
				return nil, false, geoKeyError(doc, mongoerr.New(mongoerr.BadValue, "longitude/latitude is out of bounds, lng: %s lat: %s",
					ShellValue(value.Double(sh.Flat.X)), ShellValue(value.Double(sh.Flat.Y))))
			}
			nonPoint = nonPoint || len(sh.Lines) > 0 || len(sh.Polygons) > 0
			for _, c := range geo.KeyCells(sh) {
				out = append(out, FlipCell(uint64(c)))
			}
		}
	}
	return out, nonPoint, nil
}

func geoKeyError(doc bsoncore.Document, err error) error {
	return mongoerr.New(mongoerr.Location16755, "Can't extract geo keys: %s  %s", ShellDoc(doc), err.Error())
}

// geoFieldValues is the values a geo path reaches: arrays on the way
// are walked into, the value at the end is kept whole (an array there is
// a legacy pair or a list of geometries, which geo.ParseStored reads).
func geoFieldValues(doc bsoncore.Document, path string) []bsoncore.Value {
	var out []bsoncore.Value
	var walk func(cur bsoncore.Value, parts []string)
	walk = func(cur bsoncore.Value, parts []string) {
		if len(parts) == 0 {
			out = append(out, cur)
			return
		}
		switch cur.Type {
		case bsoncore.TypeEmbeddedDocument:
			if v, ok := value.LookupField(cur.Data, parts[0]); ok {
				walk(v, parts[1:])
			}
		case bsoncore.TypeArray:
			for _, e := range value.ArrayValues(cur.Data) {
				if e.Type == bsoncore.TypeEmbeddedDocument {
					walk(e, parts)
				}
			}
		}
	}
	walk(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, strings.Split(path, "."))
	return out
}

// CellInterval is a range of cells as a key field's interval, with its
// text for explain.
func CellInterval(r geo.CellRange) FieldInterval {
	iv := CellKeyInterval(r)
	iv.LoText, iv.HiText = ShellValue(FlipCell(r.Lo)), ShellValue(FlipCell(r.Hi))
	return iv
}

// CellKeyInterval is CellInterval without the text, for the many ranges
// of a near search's rings.
func CellKeyInterval(r geo.CellRange) FieldInterval {
	return FieldInterval{Lo: EncodeKey(nil, FlipCell(r.Lo)), Hi: EncodeKey(nil, FlipCell(r.Hi)), HiThrough: true}
}

// DecodeCell reads the cell id at the start of an entry of an index
// whose first field is its geo field (the inverse of FlipCell and the
// number encoding of EncodeKey), so that a scan can measure a point's
// entry without fetching its document.
func DecodeCell(entry []byte) (uint64, bool) {
	if len(entry) < 10 || int(entry[0]) != value.ClassNumber {
		return 0, false
	}
	f := decodeFloat(entry[1:9])
	i := int64(f)
	switch entry[9] {
	case 0:
	case 1:
		if len(entry) < 18 {
			return 0, false
		}
		i += int64(decodeFloat(entry[10:18]))
	default:
		return 0, false
	}
	return uint64(i) ^ 1<<63, true
}

// decodeFloat inverts appendFloat for numbers (not NaN).
func decodeFloat(b []byte) float64 {
	bits := binary.BigEndian.Uint64(b)
	if bits>>63 == 1 {
		bits &^= 1 << 63
	} else {
		bits = ^bits
	}
	return math.Float64frombits(bits)
}

package value

import (
	"encoding/hex"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Format renders v the way mongod's BSONElement::toString does inside
// error messages ({a: 1}, [ 1, 2 ], "x"), so messages match the server's.
func Format(v bsoncore.Value) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

// FormatElem renders "key: value".
func FormatElem(key string, v bsoncore.Value) string { return key + ": " + Format(v) }

func writeValue(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		writeContainer(b, v)
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		b.WriteString(strconv.Quote(string(RawString(v))))
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		b.WriteString(FormatNumber(v))
	case bsoncore.TypeNull:
		b.WriteString("null")
	case bsoncore.TypeUndefined:
		b.WriteString("undefined")
	case bsoncore.TypeBoolean:
		b.WriteString(strconv.FormatBool(v.Boolean()))
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		b.WriteString("ObjectId('" + hex.EncodeToString(oid[:]) + "')")
	case bsoncore.TypeDateTime:
		b.WriteString("new Date(" + strconv.FormatInt(v.DateTime(), 10) + ")")
	case bsoncore.TypeMinKey:
		b.WriteString("MinKey")
	case bsoncore.TypeMaxKey:
		b.WriteString("MaxKey")
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		b.WriteString("/" + p + "/" + o)
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		b.WriteString("Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")")
	default:
		b.WriteString(v.String())
	}
}

func writeContainer(b *strings.Builder, v bsoncore.Value) {
	isDoc := v.Type == bsoncore.TypeEmbeddedDocument
	open, close := "[", "]"
	if isDoc {
		open, close = "{", "}"
	}
	it := NewIter(v.Data)
	n := 0
	for {
		k, e, ok := it.Next()
		if !ok {
			break
		}
		if n == 0 {
			b.WriteString(open + " ")
		} else {
			b.WriteString(", ")
		}
		if isDoc {
			b.Write(k)
			b.WriteString(": ")
		}
		writeValue(b, e)
		n++
	}
	if n == 0 {
		b.WriteString(open + close)
		return
	}
	b.WriteString(" " + close)
}

// FormatNumber renders numbers as mongod does: doubles keep a fractional
// part ("1.0"), decimals their exact digits.
func FormatNumber(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeDouble:
		f := v.Double()
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEIN") {
			s += ".0"
		}
		return s
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		return bson.NewDecimal128(h, l).String()
	}
	return strconv.FormatInt(v.AsInt64(), 10)
}

// TypeName is the type name mongod uses in messages (typeName(BSONType) in mongod).
func TypeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeDouble:
		return "double"
	case bsoncore.TypeString:
		return "string"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeBinary:
		return "binData"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeObjectID:
		return "objectId"
	case bsoncore.TypeBoolean:
		return "bool"
	case bsoncore.TypeDateTime:
		return "date"
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeRegex:
		return "regex"
	case bsoncore.TypeDBPointer:
		return "dbPointer"
	case bsoncore.TypeJavaScript:
		return "javascript"
	case bsoncore.TypeSymbol:
		return "symbol"
	case bsoncore.TypeCodeWithScope:
		return "javascriptWithScope"
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeTimestamp:
		return "timestamp"
	case bsoncore.TypeInt64:
		return "long"
	case bsoncore.TypeDecimal128:
		return "decimal"
	case bsoncore.TypeMinKey:
		return "minKey"
	case bsoncore.TypeMaxKey:
		return "maxKey"
	}
	return "missing"
}

package query

import (
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Type conversion: $convert and its shorthands ($toInt, $toString, ...),
// and $isNumber.

// conversionFailure is mongod's ConversionFailure (241).
const conversionFailure = mongoerr.ConversionFailure

// convertOp is a shorthand of $convert to one type ($toInt, ...): null
// for a nullish argument, and no onError.
func convertOp(name, to string) exprEntry {
	return fixed(name, 1, 1, func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		if nullish(a[0]) {
			return value.Null, nil
		}
		return convertTo(a[0], to)
	})
}

func evalIsNumber(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	return value.Bool(value.IsNumber(a[0])), nil
}

// convertTypes maps $convert's numeric type codes to names.
var convertTypes = map[int]string{1: "double", 2: "string", 7: "objectId", 8: "bool", 9: "date", 16: "int", 18: "long", 19: "decimal"}

func evalConvert(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	in := a["input"]
	to := a["to"]
	var target string
	switch {
	case to.Type == bsoncore.TypeString:
		target = to.StringValue()
	case value.IsNumber(to):
		target = convertTypes[int(value.ToFloat(to))]
	case nullish(to):
		return value.Null, nil
	}
	if target == "" || !strings.Contains("double string objectId bool date int long decimal", target) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.BadValue, "Unknown type name: %s", value.Format(to))
	}
	if nullish(in) {
		if v, ok := a["onNull"]; ok {
			return v, nil
		}
		return value.Null, nil
	}
	r, err := convertTo(in, target)
	if err != nil {
		if v, ok := a["onError"]; ok {
			return v, nil
		}
	}
	return r, err
}

func convFail(v bsoncore.Value, to string) error {
	return mongoerr.New(conversionFailure, "Unsupported conversion from %s to %s in $convert with no onError value", value.TypeName(v.Type), to)
}

// convertTo converts a non-null value to the named type.
func convertTo(v bsoncore.Value, to string) (bsoncore.Value, error) {
	switch to {
	case "double":
		return toDoubleValue(v)
	case "int", "long":
		return toIntValue(v, to)
	case "decimal":
		return toDecimalValue(v)
	case "string":
		return toStringValue(v)
	case "bool":
		switch v.Type {
		case bsoncore.TypeBoolean:
			return v, nil
		case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
			return value.Bool(!value.IsZero(v)), nil
		}
		return value.Bool(true), nil
	case "date":
		switch {
		case v.Type == bsoncore.TypeDateTime:
			return v, nil
		case v.Type == bsoncore.TypeString:
			return dateFromString(v, namedArgs{})
		case v.Type == bsoncore.TypeTimestamp || v.Type == bsoncore.TypeObjectID:
			t, err := dateValue("$toDate", v)
			return timeValue(t), err
		case v.Type == bsoncore.TypeInt64 || v.Type == bsoncore.TypeDouble || v.Type == bsoncore.TypeDecimal128:
			f := value.ToFloat(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return bsoncore.Value{}, mongoerr.New(conversionFailure, "Conversion to date failed: %s is out of range", value.Format(v))
			}
			return value.Date(int64(f)), nil
		}
	case "objectId":
		switch v.Type {
		case bsoncore.TypeObjectID:
			return v, nil
		case bsoncore.TypeString:
			oid, err := bson.ObjectIDFromHex(v.StringValue())
			if err != nil {
				return bsoncore.Value{}, mongoerr.New(conversionFailure, "Failed to parse objectId '%s' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found %d", v.StringValue(), len(v.StringValue()))
			}
			return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, oid)}, nil
		}
	}
	return bsoncore.Value{}, convFail(v, to)
}

func toDoubleValue(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeDouble:
		return v, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return value.Double(value.ToFloat(v)), nil
	case bsoncore.TypeBoolean:
		return value.Double(map[bool]float64{true: 1}[v.Boolean()]), nil
	case bsoncore.TypeDateTime:
		return value.Double(float64(v.DateTime())), nil
	case bsoncore.TypeString:
		f, err := strconv.ParseFloat(strings.TrimSpace(v.StringValue()), 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			return bsoncore.Value{}, mongoerr.New(conversionFailure, "Failed to parse number '%s' in $convert with no onError value: Did not consume whole string.", v.StringValue())
		}
		return value.Double(f), nil
	}
	return bsoncore.Value{}, convFail(v, "double")
}

func toIntValue(v bsoncore.Value, to string) (bsoncore.Value, error) {
	var n int64
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n = v.AsInt64()
	case bsoncore.TypeBoolean:
		if v.Boolean() {
			n = 1
		}
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := math.Trunc(value.ToFloat(v))
		if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return bsoncore.Value{}, mongoerr.New(conversionFailure, "Conversion would overflow target type in $convert with no onError value: %s", value.Format(v))
		}
		n = int64(f)
	case bsoncore.TypeDateTime:
		if to == "int" {
			return bsoncore.Value{}, convFail(v, to)
		}
		n = v.DateTime()
	case bsoncore.TypeString:
		var err error
		if n, err = strconv.ParseInt(v.StringValue(), 10, 64); err != nil {
			return bsoncore.Value{}, mongoerr.New(conversionFailure, "Failed to parse number '%s' in $convert with no onError value: Did not consume whole string.", v.StringValue())
		}
	default:
		return bsoncore.Value{}, convFail(v, to)
	}
	if to == "long" {
		return value.Int64(n), nil
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return bsoncore.Value{}, mongoerr.New(conversionFailure, "Conversion would overflow target type in $convert with no onError value: %s", value.Format(v))
	}
	return value.Int32(int32(n)), nil
}

func toDecimalValue(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		return v, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		d, _ := bson.ParseDecimal128(strconv.FormatInt(v.AsInt64(), 10))
		return value.Decimal(d), nil
	case bsoncore.TypeDouble:
		return decimalFromFloat(v.Double()), nil
	case bsoncore.TypeBoolean:
		return toDecimalValue(value.Int32(map[bool]int32{true: 1}[v.Boolean()]))
	case bsoncore.TypeDateTime:
		return toDecimalValue(value.Int64(v.DateTime()))
	case bsoncore.TypeString:
		d, err := bson.ParseDecimal128(v.StringValue())
		if err != nil {
			return bsoncore.Value{}, mongoerr.New(conversionFailure, "Failed to parse number '%s' in $convert with no onError value", v.StringValue())
		}
		return value.Decimal(d), nil
	}
	return bsoncore.Value{}, convFail(v, "decimal")
}

func toStringValue(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeString:
		return v, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return value.String(value.FormatNumber(v)), nil
	case bsoncore.TypeDouble:
		return value.String(strconv.FormatFloat(v.Double(), 'g', -1, 64)), nil
	case bsoncore.TypeBoolean:
		return value.String(strconv.FormatBool(v.Boolean())), nil
	case bsoncore.TypeObjectID:
		return value.String(bson.ObjectID(v.ObjectID()).Hex()), nil
	case bsoncore.TypeDateTime:
		t, _ := dateValue("$toString", v)
		s, _ := formatDate(defaultDateFormat, t)
		return value.String(s), nil
	case bsoncore.TypeSymbol:
		return value.String(v.Symbol()), nil
	}
	return bsoncore.Value{}, convFail(v, "string")
}

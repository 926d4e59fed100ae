package value

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestWholeInt64(t *testing.T) {
	dec := func(s string) bsoncore.Value {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			t.Fatal(err)
		}
		return Decimal(d)
	}
	dbl := func(f float64) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
	}
	for _, c := range []struct {
		v    bsoncore.Value
		want int64
		ok   bool
	}{
		{bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, -3)}, -3, true},
		{dbl(1.0), 1, true},
		{dbl(42.13), 0, false},
		{dbl(9.3e18), 0, false},
		{dec("12"), 12, true},
		{dec("1.20E+1"), 12, true},
		{dec("1.5"), 0, false},
		{dec("1E+30"), 0, false},
		{bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "1")}, 0, false},
	} {
		got, ok := WholeInt64(c.v)
		if got != c.want || ok != c.ok {
			t.Errorf("WholeInt64(%s) = %d, %t; want %d, %t", c.v, got, ok, c.want, c.ok)
		}
	}
}

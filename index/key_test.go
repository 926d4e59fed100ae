package index

import (
	"bytes"
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// TestEncodeKeyOrder checks, for random values, that the byte order of
// encodings equals value.Compare and that equal values encode identically.
func TestEncodeKeyOrder(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		checkEncodeKeyOrder(t, rand.New(rand.NewSource(seed)))
	}
}

func checkEncodeKeyOrder(t *testing.T, r *rand.Rand) {
	vals := make([]bsoncore.Value, 3000)
	for i := range vals {
		vals[i] = randValue(r, 2)
	}
	keys := make([][]byte, len(vals))
	for i, v := range vals {
		keys[i] = EncodeKey(nil, v)
	}
	for n := 0; n < 50000; n++ {
		i, j := r.Intn(len(vals)), r.Intn(len(vals))
		want := value.Compare(vals[i], vals[j])
		got := sign(bytes.Compare(keys[i], keys[j]))
		if got != want {
			t.Fatalf("Compare(%s, %s) = %d but keys compare %d\n%x\n%x", vals[i], vals[j], want, got, keys[i], keys[j])
		}
	}
}

func TestEncodeKeyEqualNumbers(t *testing.T) {
	one := []bsoncore.Value{
		{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)},
		{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, 1)},
		{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 1)},
		decimal("1.0"), decimal("1"), decimal("10E-1"),
	}
	for _, v := range one[1:] {
		if !bytes.Equal(EncodeKey(nil, one[0]), EncodeKey(nil, v)) {
			t.Errorf("%s encodes differently from 1", v)
		}
	}
	negZero := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Copysign(0, -1))}
	zero := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}
	if !bytes.Equal(EncodeKey(nil, negZero), EncodeKey(nil, zero)) {
		t.Error("-0.0 and 0 encode differently")
	}
}

func TestValidateID(t *testing.T) {
	cases := []struct {
		v    bsoncore.Value
		code mongoerr.Code
	}{
		{bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil)}, mongoerr.InvalidIdField},
		{bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, "a", "")}, mongoerr.InvalidIdField},
		{bsoncore.Value{Type: bsoncore.TypeUndefined}, mongoerr.InvalidIdField},
		{bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "$a", 1))}, mongoerr.DollarPrefixedFieldName},
		{bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(make([]byte, 8<<20)))}, 0},
		{bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "a", 1))}, 0},
		{bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}, 0},
	}
	for _, c := range cases {
		err := ValidateID(c.v)
		var me *mongoerr.Error
		switch {
		case c.code == 0 && err != nil:
			t.Errorf("ValidateID(%s) = %v, want nil", c.v, err)
		case c.code != 0 && (!errors.As(err, &me) || me.Code != c.code):
			t.Errorf("ValidateID(%s) = %v, want code %d", c.v, err, c.code)
		}
	}
}

// TestValidateIDOfFixedSizeTypes: the types ValidateID passes without
// encoding their key have short keys, and checking one allocates nothing.
func TestValidateIDOfFixedSizeTypes(t *testing.T) {
	oid := bson.NewObjectID()
	fixed := []bsoncore.Value{
		{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, -7)},
		{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, math.MinInt64)},
		{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Pi)},
		decimal("-1.234567890123456789012345678901234E-6000"),
		{Type: bsoncore.TypeObjectID, Data: oid[:]},
		{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, true)},
		{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MaxInt64)},
		{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, math.MaxUint32, math.MaxUint32)},
		{Type: bsoncore.TypeNull}, {Type: bsoncore.TypeMinKey}, {Type: bsoncore.TypeMaxKey},
	}
	for _, v := range fixed {
		if n := len(EncodeKey(nil, v)); n > 64 {
			t.Errorf("%s: a key of %d bytes", v.Type, n)
		}
		if allocs := testing.AllocsPerRun(10, func() {
			if err := ValidateID(v); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%s: %.0f allocations", v.Type, allocs)
		}
	}
}

func decimal(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	h, l := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

// interesting numbers cluster where encodings are delicate: around zero,
// around 2^53 (float64's integer limit) and the int64 bounds.
var interestingFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-300, 9007199254740992, -9007199254740992,
	9223372036854775807, -9223372036854775808, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, 0.1}

var interestingDecimals = []string{"0", "-0", "1", "1.0", "0.1", "-0.1", "9007199254740993", "1E+5", "NaN", "Infinity",
	"-Infinity", "123456789012345678901234567890", "9223372036854775808", "-9223372036854775809", "0.10000000000000001"}

func randValue(r *rand.Rand, depth int) bsoncore.Value {
	switch k := r.Intn(22); {
	case k < 2:
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(r.Intn(7)-3))}
	case k < 4:
		i := int64(r.Intn(7) - 3)
		if r.Intn(2) == 0 {
			i = 9007199254740992 + int64(r.Intn(5)-2)
		}
		if r.Intn(4) == 0 {
			i = math.MaxInt64 - int64(r.Intn(3))
		}
		if r.Intn(3) == 0 {
			i = -i
		}
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
	case k < 6:
		f := interestingFloats[r.Intn(len(interestingFloats))]
		if r.Intn(2) == 0 {
			f = float64(r.Intn(7)-3) / 2
		}
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
	case k < 7:
		return decimal(interestingDecimals[r.Intn(len(interestingDecimals))])
	case k < 9:
		s := []string{"", "a", "a\x00", "a\x00b", "ab", "b", "\xff"}[r.Intn(7)]
		if r.Intn(5) == 0 {
			return bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendSymbol(nil, s)}
		}
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
	case k < 11 && depth > 0:
		var elems [][]byte
		for i, n := 0, r.Intn(3); i < n; i++ {
			elems = append(elems, bsoncore.AppendValueElement(nil, []string{"a", "b", "ab"}[r.Intn(3)], randValue(r, depth-1)))
		}
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.BuildDocument(nil, elems...)}
	case k < 13 && depth > 0:
		var vals []bsoncore.Value
		for i, n := 0, r.Intn(3); i < n; i++ {
			vals = append(vals, randValue(r, depth-1))
		}
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, vals...)}
	case k < 14:
		b := []byte{1, 2, 3}[:r.Intn(4)]
		return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, byte(r.Intn(2)*4), b)}
	case k < 15:
		var oid [12]byte
		oid[11] = byte(r.Intn(3))
		return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, oid)}
	case k < 16:
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, r.Intn(2) == 0)}
	case k < 17:
		return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, int64(r.Intn(5)-2)<<40)}
	case k < 18:
		return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(r.Intn(3))<<31, uint32(r.Intn(3)))}
	case k < 19:
		return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, []string{"a", "ab", "b"}[r.Intn(3)], []string{"", "i"}[r.Intn(2)])}
	case k < 20:
		var oid [12]byte
		oid[0] = byte(r.Intn(2))
		return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: bsoncore.AppendDBPointer(nil, []string{"a", "ab", "b"}[r.Intn(3)], oid)}
	case k < 21:
		scope := bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "x", int32(r.Intn(2))))
		if r.Intn(2) == 0 {
			return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendJavaScript(nil, []string{"f", "g"}[r.Intn(2)])}
		}
		return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, []string{"f", "g"}[r.Intn(2)], scope)}
	}
	return bsoncore.Value{Type: []bsoncore.Type{bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeNull, bsoncore.TypeUndefined}[r.Intn(4)]}
}

func BenchmarkEncodeKey(b *testing.B) {
	oid := bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, [12]byte{1, 2, 3})}
	doc := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.BuildDocument(nil,
		bsoncore.AppendStringElement(nil, "name", "alice"), bsoncore.AppendInt64Element(nil, "n", 1<<60))}
	buf := make([]byte, 0, 128)
	b.Run("objectid", func(b *testing.B) {
		for b.Loop() {
			buf = EncodeKey(buf[:0], oid)
		}
	})
	b.Run("document", func(b *testing.B) {
		for b.Loop() {
			buf = EncodeKey(buf[:0], doc)
		}
	})
}

// TestEncodeIDKeepsOrderAndIdentity: _id keys of any length are bounded,
// equal exactly when the values are equal, and order as the values do
// except among long keys that share their first MaxKeySize bytes.
func TestEncodeIDKeepsOrderAndIdentity(t *testing.T) {
	str := func(s string) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
	}
	long := strings.Repeat("m", MaxKeySize)
	vals := []bsoncore.Value{
		str(""), str("a"), str(long[:MaxKeySize-3]), str(long[:MaxKeySize-2]), str(long[:MaxKeySize-1]),
		str(long), str(long + "a"), str(long + "b"), str(long + long), str(long + "z"), str("n"),
		str(strings.Repeat("m", MaxKeySize-10) + "a" + long), str(strings.Repeat("x", 8<<20)),
		{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)},
		{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, 0, make([]byte, 3*MaxKeySize))},
	}
	isLong := func(key []byte) bool { return len(key) > MaxKeySize }
	for i, a := range vals {
		ka := EncodeID([]byte("prefix"), a)[len("prefix"):]
		if len(ka) > longIDKeySize || isLong(ka) != (len(EncodeKey(nil, a)) > MaxKeySize) {
			t.Fatalf("%d: key of %d bytes, long %v", i, len(ka), isLong(ka))
		}
		for j, b := range vals {
			kb := EncodeID(nil, b)
			want := bytes.Compare(EncodeKey(nil, a), EncodeKey(nil, b))
			got := bytes.Compare(ka, kb)
			if (got == 0) != (want == 0) {
				t.Errorf("%d, %d: keys equal %v, values equal %v", i, j, got == 0, want == 0)
			}
			sharedLong := isLong(ka) && isLong(kb) && bytes.Equal(ka[:MaxKeySize], kb[:MaxKeySize])
			if !sharedLong && got != want {
				t.Errorf("%d, %d: keys compare %d, values %d", i, j, got, want)
			}
		}
	}
}

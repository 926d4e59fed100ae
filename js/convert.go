package js

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"

	"github.com/dop251/goja"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The conversions follow mongod's JavaScript (its ValueReader and
// ValueWriter): BSON numbers but int64 and decimal become JavaScript
// numbers, and JavaScript numbers come back as doubles; the other BSON
// types become objects of the shell's classes (prelude.go) and come back
// as themselves. docs/design/javascript.md has the table.

// maxDepth bounds the nesting of a converted value, as BSON's own depth
// limit does, and stops a cyclic object.
const maxDepth = 150

// toJS converts a BSON value to a JavaScript value of rt.
func (rt *runtime) toJS(v bsoncore.Value) (goja.Value, error) {
	vm := rt.vm
	switch v.Type {
	case bsoncore.TypeDouble:
		return vm.ToValue(v.Double()), nil
	case bsoncore.TypeInt32:
		return vm.ToValue(v.Int32()), nil
	case bsoncore.TypeString:
		return vm.ToValue(v.StringValue()), nil
	case bsoncore.TypeSymbol:
		return vm.ToValue(v.Symbol()), nil
	case bsoncore.TypeBoolean:
		return vm.ToValue(v.Boolean()), nil
	case bsoncore.TypeNull:
		return goja.Null(), nil
	case bsoncore.TypeUndefined:
		return goja.Undefined(), nil
	case bsoncore.TypeEmbeddedDocument:
		return rt.docToJS(v.Data)
	case bsoncore.TypeArray:
		vals := value.ArrayValues(v.Data)
		items := make([]any, len(vals))
		for i, e := range vals {
			jv, err := rt.toJS(e)
			if err != nil {
				return nil, err
			}
			items[i] = jv
		}
		arr := vm.NewArray(items...)
		rt.origins[arr] = v.Data
		return arr, nil
	case bsoncore.TypeObjectID:
		return rt.object(rt.proto.oid, "str", vm.ToValue(bson.ObjectID(v.ObjectID()).Hex()), true), nil
	case bsoncore.TypeDateTime:
		return vm.New(rt.dateCtor, vm.ToValue(v.DateTime()))
	case bsoncore.TypeRegex:
		pattern, opts := v.Regex()
		return vm.New(rt.regexpCtor, vm.ToValue(pattern), vm.ToValue(jsFlags(opts)))
	case bsoncore.TypeInt64:
		n := v.Int64()
		o := rt.object(rt.proto.long, "__v", vm.ToValue(strconv.FormatInt(n, 10)), false)
		_ = o.DefineDataProperty("floatApprox", vm.ToValue(float64(n)), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		return o, nil
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		return rt.object(rt.proto.dec, "__v", vm.ToValue(bson.NewDecimal128(h, l).String()), false), nil
	case bsoncore.TypeBinary:
		sub, data := v.Binary()
		return rt.binData(sub, data), nil
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		o := rt.object(rt.proto.ts, "t", vm.ToValue(t), true)
		_ = o.DefineDataProperty("i", vm.ToValue(i), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		return o, nil
	case bsoncore.TypeMinKey:
		return rt.minKey, nil
	case bsoncore.TypeMaxKey:
		return rt.maxKey, nil
	case bsoncore.TypeJavaScript:
		return rt.object(rt.proto.code, "code", vm.ToValue(v.JavaScript()), true), nil
	case bsoncore.TypeCodeWithScope:
		code, _ := v.CodeWithScope()
		return rt.object(rt.proto.code, "code", vm.ToValue(code), true), nil
	case bsoncore.TypeDBPointer:
		ns, oid := v.DBPointer()
		o := rt.object(rt.proto.dbptr, "ns", vm.ToValue(ns), true)
		_ = o.DefineDataProperty("id", rt.object(rt.proto.oid, "str", vm.ToValue(bson.ObjectID(oid).Hex()), true), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		return o, nil
	}
	return nil, mongoerr.New(mongoerr.JSInterpreterFailure, "cannot convert BSON type %d to JavaScript", v.Type)
}

func (rt *runtime) docToJS(doc []byte) (goja.Value, error) {
	o := rt.vm.NewObject()
	rt.origins[o] = doc
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			return o, nil
		}
		jv, err := rt.toJS(v)
		if err != nil {
			return nil, err
		}
		if err := o.Set(string(k), jv); err != nil {
			return nil, err
		}
	}
}

// object is a new object of proto with one own property.
func (rt *runtime) object(proto *goja.Object, key string, v goja.Value, enumerable bool) *goja.Object {
	o := rt.vm.CreateObject(proto)
	flag := goja.FLAG_FALSE
	if enumerable {
		flag = goja.FLAG_TRUE
	}
	_ = o.DefineDataProperty(key, v, goja.FLAG_FALSE, goja.FLAG_FALSE, flag)
	return o
}

func (rt *runtime) binData(sub byte, data []byte) *goja.Object {
	o := rt.object(rt.proto.bin, "__t", rt.vm.ToValue(int(sub)), false)
	_ = o.DefineDataProperty("__b64", rt.vm.ToValue(base64.StdEncoding.EncodeToString(data)), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	return o
}

// jsFlags keeps the BSON regex options JavaScript has (i, m, s, u); x
// has no JavaScript equivalent.
func jsFlags(opts string) string {
	var b strings.Builder
	for _, c := range opts {
		if strings.ContainsRune("imsu", c) {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// fromJS converts a JavaScript value to BSON, failing past max bytes.
func (rt *runtime) fromJS(v goja.Value, max int) (bsoncore.Value, error) {
	w := writer{rt: rt, max: max}
	buf, t, err := w.value(nil, v, 0, true, false)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if len(buf) > max {
		return bsoncore.Value{}, w.tooLarge(len(buf))
	}
	return bsoncore.Value{Type: t, Data: buf}, nil
}

// writer converts JavaScript to BSON, counting the bytes against max.
type writer struct {
	rt  *runtime
	max int
}

func (w *writer) tooLarge(n int) error {
	return mongoerr.New(mongoerr.JSInterpreterFailure, "Converting from JavaScript to BSON failed: Object size %d exceeds limit of %d bytes.", n, w.max)
}

// value appends v's BSON payload to dst and returns its type. top marks
// the value itself (undefined there is null, as mongod returns it); wasInt
// that the element it replaces was an int32, which an integral number
// stays (mongod's writer keeps a field's int type the same way).
func (w *writer) value(dst []byte, v goja.Value, depth int, top, wasInt bool) ([]byte, bsoncore.Type, error) {
	switch {
	case v == nil || goja.IsUndefined(v):
		if top {
			return dst, bsoncore.TypeNull, nil
		}
		return dst, bsoncore.TypeUndefined, nil
	case goja.IsNull(v):
		return dst, bsoncore.TypeNull, nil
	}
	if o, ok := v.(*goja.Object); ok {
		if depth >= maxDepth {
			return nil, 0, mongoerr.New(mongoerr.JSInterpreterFailure, "Converting from JavaScript to BSON failed: Object depth exceeds limit of %d", maxDepth)
		}
		return w.object(dst, o, depth)
	}
	switch x := v.Export().(type) {
	case bool:
		return bsoncore.AppendBoolean(dst, x), bsoncore.TypeBoolean, nil
	case string:
		return bsoncore.AppendString(dst, x), bsoncore.TypeString, nil
	case int64:
		if wasInt && x == int64(int32(x)) {
			return bsoncore.AppendInt32(dst, int32(x)), bsoncore.TypeInt32, nil
		}
		return bsoncore.AppendDouble(dst, float64(x)), bsoncore.TypeDouble, nil
	case float64:
		return bsoncore.AppendDouble(dst, x), bsoncore.TypeDouble, nil
	}
	return bsoncore.AppendString(dst, v.String()), bsoncore.TypeString, nil // a symbol or a bigint
}

func (w *writer) object(dst []byte, o *goja.Object, depth int) ([]byte, bsoncore.Type, error) {
	rt := w.rt
	switch o.Prototype() {
	case rt.proto.oid:
		oid, err := bson.ObjectIDFromHex(o.Get("str").String())
		if err != nil {
			return nil, 0, mongoerr.New(mongoerr.JSInterpreterFailure, "invalid object id: %s", o.Get("str"))
		}
		return bsoncore.AppendObjectID(dst, oid), bsoncore.TypeObjectID, nil
	case rt.proto.long:
		n, err := strconv.ParseInt(o.Get("__v").String(), 10, 64)
		if err != nil {
			return nil, 0, mongoerr.New(mongoerr.JSInterpreterFailure, "could not convert \"%s\" to NumberLong", o.Get("__v"))
		}
		return bsoncore.AppendInt64(dst, n), bsoncore.TypeInt64, nil
	case rt.proto.int:
		return bsoncore.AppendInt32(dst, int32(o.Get("__v").ToInteger())), bsoncore.TypeInt32, nil
	case rt.proto.dec:
		d, err := bson.ParseDecimal128(o.Get("__v").String())
		if err != nil {
			return nil, 0, mongoerr.New(mongoerr.JSInterpreterFailure, "Failed to parse string to decimal: %s", o.Get("__v"))
		}
		h, l := d.GetBytes()
		return bsoncore.AppendDecimal128(dst, h, l), bsoncore.TypeDecimal128, nil
	case rt.proto.bin:
		data, err := base64.StdEncoding.DecodeString(o.Get("__b64").String())
		if err != nil {
			return nil, 0, mongoerr.New(mongoerr.JSInterpreterFailure, "BinData: invalid base64")
		}
		return bsoncore.AppendBinary(dst, byte(o.Get("__t").ToInteger()), data), bsoncore.TypeBinary, nil
	case rt.proto.ts:
		return bsoncore.AppendTimestamp(dst, uint32(o.Get("t").ToInteger()), uint32(o.Get("i").ToInteger())), bsoncore.TypeTimestamp, nil
	case rt.proto.minKey:
		return dst, bsoncore.TypeMinKey, nil
	case rt.proto.maxKey:
		return dst, bsoncore.TypeMaxKey, nil
	case rt.proto.code:
		return bsoncore.AppendJavaScript(dst, o.Get("code").String()), bsoncore.TypeJavaScript, nil
	}
	switch o.ClassName() {
	case "Date":
		ms := o.ToNumber().ToFloat()
		if math.IsNaN(ms) { // an invalid date, as mongod writes it
			return bsoncore.AppendDateTime(dst, math.MinInt64), bsoncore.TypeDateTime, nil
		}
		return bsoncore.AppendDateTime(dst, int64(ms)), bsoncore.TypeDateTime, nil
	case "RegExp":
		return bsoncore.AppendRegex(dst, o.Get("source").String(), bsonOptions(o.Get("flags").String())), bsoncore.TypeRegex, nil
	case "Function":
		return bsoncore.AppendJavaScript(dst, o.String()), bsoncore.TypeJavaScript, nil
	case "Array":
		return w.array(dst, o, depth)
	}
	return w.document(dst, o, depth)
}

func (w *writer) array(dst []byte, o *goja.Object, depth int) ([]byte, bsoncore.Type, error) {
	n := o.Get("length").ToInteger()
	orig := w.rt.origins[o]
	idx, dst := bsoncore.ReserveLength(dst)
	for i := int64(0); i < n; i++ {
		var err error
		if dst, err = w.element(dst, strconv.FormatInt(i, 10), o.Get(strconv.FormatInt(i, 10)), orig, depth); err != nil {
			return nil, 0, err
		}
	}
	dst = append(dst, 0)
	dst = bsoncore.UpdateLength(dst, idx, int32(len(dst)-int(idx)))
	return dst, bsoncore.TypeArray, nil
}

func (w *writer) document(dst []byte, o *goja.Object, depth int) ([]byte, bsoncore.Type, error) {
	orig := w.rt.origins[o]
	idx, dst := bsoncore.ReserveLength(dst)
	for _, k := range o.Keys() {
		v := o.Get(k)
		if f, ok := v.(*goja.Object); ok && f.ClassName() == "Function" {
			continue // methods are not data, as mongod's writer skips them
		}
		var err error
		if dst, err = w.element(dst, k, v, orig, depth); err != nil {
			return nil, 0, err
		}
	}
	dst = append(dst, 0)
	dst = bsoncore.UpdateLength(dst, idx, int32(len(dst)-int(idx)))
	return dst, bsoncore.TypeEmbeddedDocument, nil
}

// element appends key: v, writing the type byte once the payload is known.
func (w *writer) element(dst []byte, key string, v goja.Value, orig []byte, depth int) ([]byte, error) {
	at := len(dst)
	dst = append(dst, 0)
	dst = append(dst, key...)
	dst = append(dst, 0)
	wasInt := false
	if orig != nil {
		e, ok := value.LookupField(orig, key)
		wasInt = ok && e.Type == bsoncore.TypeInt32
	}
	dst, t, err := w.value(dst, v, depth+1, false, wasInt)
	if err != nil {
		return nil, err
	}
	if len(dst) > w.max {
		return nil, w.tooLarge(len(dst))
	}
	dst[at] = byte(t)
	return dst, nil
}

// bsonOptions keeps the JavaScript flags BSON has, in BSON's order.
func bsonOptions(flags string) string {
	var b strings.Builder
	for _, c := range "imsu" {
		if strings.ContainsRune(flags, c) {
			b.WriteRune(c)
		}
	}
	return b.String()
}

package storage

import (
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
)

// Every map we write has the same shape: one raw-bytes key field whose
// bytewise order is the order we want, and one adaptive bytes value field.
//
// The value descriptor also has a second, always-null address field. It
// carries no data: in the pinned Dolt version the leaf serializer records
// where chunk addresses sit in values only when the descriptor has an
// address field (TupleDesc.AddressFieldCount ignores adaptive fields), and
// GC, pull and diff find out-of-line documents only through those
// records. Without it GC deletes every document over the inline limit
// (TestGCKeepsOutOfLineDocuments).
var (
	keyDesc = val.NewTupleDescriptor(val.Type{Enc: val.ByteStringEnc})
	valDesc = val.NewTupleDescriptor(
		val.Type{Enc: val.BytesAdaptiveEnc},
		val.Type{Enc: val.BytesAddrEnc, Nullable: true})
)

// inlineLimit is the largest value we store inline. Above it we write the
// blob ourselves: Dolt's PutAdaptiveBytesFromInline truncates values of
// 64 KiB and more (docs/format/root.md).
const inlineLimit = 2047

func keyTuple(ns tree.NodeStore, k []byte) (val.Tuple, error) {
	b := val.NewTupleBuilder(keyDesc, ns)
	b.PutByteString(0, k)
	return b.Build(ns.Pool())
}

func keyBytes(t val.Tuple) []byte {
	b, _ := keyDesc.GetBytes(0, t)
	return b
}

func valueTuple(ctx context.Context, ns tree.NodeStore, v []byte) (val.Tuple, error) {
	b := val.NewTupleBuilder(valDesc, ns)
	if len(v) > inlineLimit {
		addr, err := ns.WriteBytes(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("write blob of %d bytes: %w", len(v), err)
		}
		b.PutAdaptiveFromOutline(0, int64(len(v)), addr)
	} else if err := b.PutAdaptiveBytesFromInline(ctx, 0, v); err != nil {
		return nil, err
	}
	return b.Build(ns.Pool())
}

// valueBytes returns the value's bytes, reading the blob when out of line.
// Inline bytes alias the node; callers that keep them must not modify them.
func valueBytes(ctx context.Context, ns tree.NodeStore, t val.Tuple) ([]byte, error) {
	v, ok, err := valDesc.GetBytesAdaptiveValue(ctx, 0, ns, t)
	if err != nil || !ok {
		return nil, err
	}
	switch x := v.(type) {
	case []byte:
		return x, nil
	case *val.ByteArray:
		return x.GetBytes(ctx)
	default:
		return nil, fmt.Errorf("unexpected adaptive value %T", v)
	}
}

func emptyMap(ctx context.Context, ns tree.NodeStore) (prolly.Map, error) {
	return prolly.NewMapFromTuples(ctx, ns, keyDesc, valDesc)
}

func loadMap(ctx context.Context, ns tree.NodeStore, addr [20]byte) (prolly.Map, error) {
	nd, err := ns.Read(ctx, addr)
	if err != nil {
		return prolly.Map{}, err
	}
	return prolly.NewMap(nd, ns, keyDesc, valDesc), nil
}

// getValue looks key up in a map (or mutable map) and copies the value out.
func getValue(ctx context.Context, ns tree.NodeStore, m interface {
	Get(context.Context, val.Tuple, tree.KeyValueFn[val.Tuple, val.Tuple]) error
}, key val.Tuple) ([]byte, bool, error) {
	var out []byte
	var found bool
	err := m.Get(ctx, key, func(k, v val.Tuple) error {
		if k == nil {
			return nil
		}
		b, err := valueBytes(ctx, ns, v)
		if err != nil {
			return err
		}
		found = true
		out = append([]byte(nil), b...)
		return nil
	})
	return out, found, err
}

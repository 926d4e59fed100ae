package storage

import (
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"

	"github.com/dumbodb/dumbodb/storage/doctree"
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

func keyBytes(t val.Tuple) []byte {
	b, _ := keyDesc.GetBytes(0, t)
	return b
}

func valueTuple(ctx context.Context, ns tree.NodeStore, v []byte) (val.Tuple, error) {
	return buildValue(ctx, ns, val.NewTupleBuilder(valDesc, ns), v)
}

// buildValue is valueTuple with a builder of the caller's, which a fold
// reuses for all its values.
func buildValue(ctx context.Context, ns tree.NodeStore, b *val.TupleBuilder, v []byte) (val.Tuple, error) {
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

// docWriter is how a database writes documents: from threshold bytes up
// as doctrees, through a Writer that skips nodes it already wrote.
type docWriter struct {
	threshold int
	trees     *doctree.Writer
}

// docValueTuple stores a document: as a doctree when largeDoc says so
// (nil: never), else as a plain value. A doctree value has empty bytes in
// field 0 and the tree's root in field 1 (docs/format/root.md).
func docValueTuple(ctx context.Context, ns tree.NodeStore, doc []byte, largeDoc *docWriter) (val.Tuple, error) {
	return buildDocValue(ctx, ns, val.NewTupleBuilder(valDesc, ns), doc, largeDoc)
}

// buildDocValue is docValueTuple with a builder of the caller's.
func buildDocValue(ctx context.Context, ns tree.NodeStore, b *val.TupleBuilder, doc []byte, largeDoc *docWriter) (val.Tuple, error) {
	if largeDoc == nil || len(doc) < largeDoc.threshold {
		return buildValue(ctx, ns, b, doc)
	}
	m, err := largeDoc.trees.Build(ctx, doc)
	if err != nil {
		return nil, fmt.Errorf("write doctree of %d bytes: %w", len(doc), err)
	}
	if err := b.PutAdaptiveBytesFromInline(ctx, 0, nil); err != nil {
		return nil, err
	}
	b.PutBytesAddr(1, m.HashOf())
	return b.Build(ns.Pool())
}

// inlineDocument returns the bytes of a value that holds its document
// inline: an adaptive field 0 with the zero header and the bytes after
// it. A doctree's field 0 is empty and a blob's header is not zero, so
// neither passes. It reads in place, without the look at field 1 that
// docTree makes: a scan asks this of every document.
func inlineDocument(t val.Tuple) ([]byte, bool) {
	if raw := valDesc.GetField(0, t); len(raw) > 1 && raw[0] == 0 {
		return raw[1:], true
	}
	return nil, false
}

// docTree returns the doctree a value refers to, if it is one.
func docTree(ctx context.Context, ns tree.NodeStore, t val.Tuple) (doctree.Tree, bool, error) {
	if _, inline := inlineDocument(t); inline {
		return doctree.Tree{}, false, nil
	}
	addr, ok := valDesc.GetBytesAddr(1, t)
	if !ok || addr.IsEmpty() {
		return doctree.Tree{}, false, nil
	}
	tr, err := doctree.Load(ctx, ns, addr)
	return tr, err == nil, err
}

// valueFields returns the value's bytes; of a doctree, only the fields f
// keeps.
func valueFields(ctx context.Context, ns tree.NodeStore, t val.Tuple, f *doctree.Fields) ([]byte, error) {
	tr, ok, err := docTree(ctx, ns, t)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return valueBytesPlain(ctx, ns, t)
	}
	return tr.Project(ctx, f)
}

// valueBytes returns the value's bytes, reading the blob or doctree when
// out of line. Inline bytes alias the node; callers that keep them must
// not modify them.
func valueBytes(ctx context.Context, ns tree.NodeStore, t val.Tuple) ([]byte, error) {
	if doc, inline := inlineDocument(t); inline {
		return doc, nil
	}
	tr, ok, err := docTree(ctx, ns, t)
	if err != nil {
		return nil, err
	}
	if ok {
		return tr.Document(ctx)
	}
	return valueBytesPlain(ctx, ns, t)
}

func valueBytesPlain(ctx context.Context, ns tree.NodeStore, t val.Tuple) ([]byte, error) {
	// An inline adaptive value is a zero header byte and the bytes; read
	// it in place rather than through the interface GetBytesAdaptiveValue
	// returns, which allocates on every small document and index entry.
	if raw := valDesc.GetField(0, t); len(raw) > 0 && raw[0] == 0 {
		return raw[1:], nil
	}
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

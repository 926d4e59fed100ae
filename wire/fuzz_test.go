package wire

import (
	"bytes"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

// FuzzRead checks that Read never panics, and that whatever it accepts is
// safe to use and survives a Write/Read round trip unchanged.
func FuzzRead(f *testing.F) {
	for _, msg := range sampleMessages(f) {
		for _, comp := range allCompressors {
			f.Add(encode(f, 1, 2, msg, comp))
		}
	}
	ins := insertMsg(f, 2)
	f.Add(driverMsg(3, wiremessage.ChecksumPresent, ins.Body, ins.Sequences[0].Documents...))
	f.Add(rawMessage(OpMsg, u32(0), []byte{0}, docBytes(
		[]byte{byte(bsoncore.TypeCodeWithScope), 'c', 0}, u32(15), u32(2), []byte("a\x00"), docBytes(),
		[]byte{byte(bsoncore.TypeBinary), 'b', 0}, u32(6), []byte{2}, u32(2), []byte{1, 2},
		[]byte{byte(bsoncore.TypeDBPointer), 'p', 0}, u32(2), []byte("a\x00"), make([]byte, 12),
		[]byte{byte(bsoncore.TypeRegex), 'r', 0, 'a', 0, 'i', 0},
	)))
	f.Add(rawMessage(OpMsg, u32(0), []byte{0}, nested(6)))
	twice := &Msg{Body: ins.Body, Sequences: []Sequence{ins.Sequences[0], ins.Sequences[0]}}
	for _, comp := range allCompressors {
		f.Add(encode(f, 4, 0, twice, comp))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		h, msg, comp, err := Read(bytes.NewReader(data))
		if err != nil {
			if msg != nil {
				t.Fatalf("Read returned both %#v and %v", msg, err)
			}
			return
		}
		if int(h.MessageLength) > len(data) {
			t.Fatalf("header length %d beyond the %d bytes read", h.MessageLength, len(data))
		}
		for _, doc := range documents(msg) {
			walk(t, doc)
		}
		if m, ok := msg.(*Msg); ok {
			if doc, err := m.Document(); err == nil {
				walk(t, doc)
			}
		}
		var buf bytes.Buffer
		if err := Write(&buf, h.RequestID, h.ResponseTo, msg, comp); err != nil {
			t.Fatalf("Write of an accepted message: %v", err)
		}
		_, again, _, err := Read(&buf)
		if err != nil {
			t.Fatalf("Read of a rewritten message: %v", err)
		}
		if !reflect.DeepEqual(again, msg) {
			t.Fatalf("rewritten message differs:\n%#v\n%#v", again, msg)
		}
	})
}

// FuzzValidateDocument checks the validation every command document
// passes on its way in: it never panics, and what it accepts the
// panicking bsoncore accessors read safely, all the way down.
func FuzzValidateDocument(f *testing.F) {
	for _, msg := range sampleMessages(f) {
		for _, doc := range documents(msg) {
			f.Add([]byte(doc))
		}
	}
	f.Add(nested(maxNestingDepth + 1))
	f.Add(docBytes([]byte{byte(bsoncore.TypeString), 's', 0}, u32(2), []byte{'a', 1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, rest, err := readDocument(data)
		if err != nil {
			return
		}
		if len(doc)+len(rest) != len(data) {
			t.Fatalf("document of %d bytes and %d left over from %d", len(doc), len(rest), len(data))
		}
		if err := doc.Validate(); err != nil { // validation is one pass of ours, never laxer than bsoncore's
			t.Fatalf("accepted a document bsoncore refuses: %v", err)
		}
		walk(t, doc)
	})
}

func documents(msg Message) []bsoncore.Document {
	switch m := msg.(type) {
	case *Msg:
		docs := []bsoncore.Document{m.Body}
		for _, s := range m.Sequences {
			docs = append(docs, s.Documents...)
		}
		return docs
	case *Query:
		return []bsoncore.Document{m.Query, m.ReturnFieldsSelector}
	case *Reply:
		return m.Documents
	}
	return nil
}

// walk reads every value of doc with bsoncore's panicking accessors, proving
// that validation leaves nothing for them to trip on.
func walk(t *testing.T, doc bsoncore.Document) {
	if doc == nil {
		return
	}
	elems, err := doc.Elements()
	if err != nil {
		t.Fatalf("accepted document has bad elements: %v", err)
	}
	for _, e := range elems {
		_ = e.Key()
		v := e.Value()
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			walk(t, v.Document())
		case bsoncore.TypeArray:
			walk(t, bsoncore.Document(v.Array()))
		case bsoncore.TypeCodeWithScope:
			_, scope := v.CodeWithScope()
			walk(t, scope)
		case bsoncore.TypeString:
			_ = v.StringValue()
		case bsoncore.TypeJavaScript:
			_ = v.JavaScript()
		case bsoncore.TypeSymbol:
			_ = v.Symbol()
		case bsoncore.TypeDBPointer:
			_, _ = v.DBPointer()
		case bsoncore.TypeBinary:
			_, _ = v.Binary()
		case bsoncore.TypeRegex:
			_, _ = v.Regex()
		case bsoncore.TypeBoolean:
			_ = v.Boolean()
		default:
			_ = v.String()
		}
	}
}

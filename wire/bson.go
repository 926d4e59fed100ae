package wire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxNestingDepth bounds how deeply documents and arrays may nest (mongod's
// default maxBSONDepth). Validation recurses, so the bound also keeps a
// hostile message from exhausting the stack.
const maxNestingDepth = 200

var errTooDeep = fmt.Errorf("documents nested deeper than %d levels", maxNestingDepth)

// checkFraming checks that doc's length prefix matches its size: cheap, and
// enough to walk its elements without running off either end.
func checkFraming(doc bsoncore.Document) error {
	if len(doc) < 5 {
		return fmt.Errorf("document of %d bytes is shorter than the minimum 5", len(doc))
	}
	if n := int32(le.Uint32(doc)); int(n) != len(doc) {
		return fmt.Errorf("document length prefix %d disagrees with its %d bytes", n, len(doc))
	}
	return nil
}

// validateDocument checks that doc, found at nesting level depth, is
// well-formed BSON all the way down. bsoncore's Validate checks only the
// framing of the top level, while the layers above read nested values with
// accessors that panic on malformed bytes; so nested documents, strings and
// the like are checked here, once, at the edge.
func validateDocument(doc bsoncore.Document, depth int) error {
	if depth > maxNestingDepth {
		return errTooDeep
	}
	if err := checkFraming(doc); err != nil {
		return err
	}
	// bsoncore's Validate would check this and each element's framing,
	// which ReadElement below checks again: one pass does both.
	if doc[len(doc)-1] != 0 {
		return errors.New("document does not end in a NUL byte")
	}
	for rem := doc[4 : len(doc)-1]; len(rem) > 0; {
		elem, rest, ok := bsoncore.ReadElement(rem)
		if !ok { // a bad type, a key without its NUL, a value past the end
			return errors.New("malformed element")
		}
		if err := validateValue(elem.Value(), depth); err != nil {
			if err == errTooDeep {
				return err // a path of maxNestingDepth fields would drown the message
			}
			return fmt.Errorf("field %q: %w", elem.Key(), err)
		}
		rem = rest
	}
	return nil
}

// validateValue checks what ReadElement does not: the inside of values. Their
// outer size is already known to fit.
func validateValue(v bsoncore.Value, depth int) error {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return validateDocument(v.Data, depth+1)
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		return validateString(v.Data)
	case bsoncore.TypeDBPointer:
		return validateString(v.Data[:len(v.Data)-12]) // namespace, then a 12-byte ObjectId
	case bsoncore.TypeCodeWithScope:
		return validateCodeWithScope(v.Data, depth)
	case bsoncore.TypeBinary:
		return validateBinary(v.Data)
	case bsoncore.TypeBoolean:
		if v.Data[0] > 1 {
			return fmt.Errorf("boolean byte %#x is neither 0 nor 1", v.Data[0])
		}
	}
	return nil
}

// validateString checks a BSON string that fills data: an int32 length
// counting a terminating NUL, which must be there.
func validateString(data []byte) error {
	if n := int32(le.Uint32(data)); n < 1 || int(n) != len(data)-4 || data[len(data)-1] != 0 {
		return errors.New("malformed string")
	}
	return nil
}

// validateCodeWithScope checks int32 total size, string code, document scope.
func validateCodeWithScope(data []byte, depth int) error {
	const minLen = 4 + 5 + 5 // size, "" code, {} scope
	if len(data) < minLen {
		return errors.New("code with scope too short")
	}
	codeEnd := 8 + int(int32(le.Uint32(data[4:])))
	if codeEnd < 9 || codeEnd > len(data)-5 {
		return errors.New("code with scope has a malformed code string")
	}
	if err := validateString(data[4:codeEnd]); err != nil {
		return fmt.Errorf("code with scope: %w", err)
	}
	return validateDocument(data[codeEnd:], depth+1)
}

// validateBinary checks the one binary subtype with inner structure: the
// deprecated subtype 2 repeats the payload length inside the payload.
func validateBinary(data []byte) error {
	const subtypeOldBinary = 2
	if data[4] != subtypeOldBinary {
		return nil
	}
	n := len(data) - 5
	if n < 4 || int(int32(le.Uint32(data[5:]))) != n-4 {
		return errors.New("malformed binary subtype 2")
	}
	return nil
}

// Document returns the command document with every document sequence folded
// into the body as an array field named by the sequence identifier (drivers
// send insert's documents as a sequence "documents"; commands want one
// document). Without sequences it returns Body itself; otherwise it builds the
// result in one allocation. A sequence named like a body field, or like
// another sequence, is a *SequenceError; other failures are ProtocolErrors.
func (m *Msg) Document() (bsoncore.Document, error) {
	if len(m.Sequences) == 0 {
		return m.Body, nil
	}
	if err := checkFraming(m.Body); err != nil {
		return nil, protocolErrorf("OP_MSG body: %w", err)
	}
	size := len(m.Body)
	for i, s := range m.Sequences {
		if err := checkFoldable(m.Body, m.Sequences[:i], s); err != nil {
			return nil, err
		}
		size += arrayElementLen(s)
	}
	if size > math.MaxInt32 {
		return nil, protocolErrorf("OP_MSG folds into a document of %d bytes, too large for BSON", size)
	}
	doc := make(bsoncore.Document, 0, size)
	doc = append(doc, m.Body[:len(m.Body)-1]...)
	for _, s := range m.Sequences {
		doc = appendArrayElement(doc, s)
	}
	doc = append(doc, 0)
	le.PutUint32(doc, uint32(len(doc)))
	return doc, nil
}

// SequenceError is Document's refusal of a document sequence whose
// identifier is taken, by another sequence or (InBody) by a body field.
// Unlike a ProtocolError it leaves the connection usable: the message was
// framed correctly, and mongod answers it with an error reply.
type SequenceError struct {
	Identifier string
	InBody     bool
}

func (e *SequenceError) Error() string {
	if e.InBody {
		return fmt.Sprintf("wire: OP_MSG field %q is in both the body and a document sequence", e.Identifier)
	}
	return fmt.Sprintf("wire: OP_MSG has two document sequences named %q", e.Identifier)
}

// checkFoldable reports whether s can be added to body, into which the
// sequences before have already been folded.
func checkFoldable(body bsoncore.Document, before []Sequence, s Sequence) error {
	if strings.IndexByte(s.Identifier, 0) >= 0 {
		return protocolErrorf("OP_MSG document sequence identifier %q contains NUL", s.Identifier)
	}
	if hasKey(body, s.Identifier) {
		return &SequenceError{Identifier: s.Identifier, InBody: true}
	}
	for _, b := range before {
		if b.Identifier == s.Identifier {
			return &SequenceError{Identifier: s.Identifier}
		}
	}
	for i, doc := range s.Documents {
		if err := checkFraming(doc); err != nil {
			return protocolErrorf("OP_MSG document sequence %q document %d: %w", s.Identifier, i, err)
		}
	}
	return nil
}

// hasKey reports whether the top level of doc, which is framed, has key.
func hasKey(doc bsoncore.Document, key string) bool {
	for rem := doc[4 : len(doc)-1]; len(rem) > 0; {
		elem, rest, ok := bsoncore.ReadElement(rem)
		if !ok {
			return false
		}
		if string(elem.KeyBytes()) == key {
			return true
		}
		rem = rest
	}
	return false
}

// arrayElementLen is the size of s as an array element: type, key, NUL,
// length, then per document a type, a decimal index key and a NUL, and the
// array's closing NUL.
func arrayElementLen(s Sequence) int {
	n := 1 + len(s.Identifier) + 1 + 4 + 1
	for i, doc := range s.Documents {
		n += 1 + decimalLen(i) + 1 + len(doc)
	}
	return n
}

func appendArrayElement(dst []byte, s Sequence) []byte {
	dst = append(dst, byte(bsoncore.TypeArray))
	dst = append(dst, s.Identifier...)
	dst = append(dst, 0)
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // length, filled in below
	for i, doc := range s.Documents {
		dst = append(dst, byte(bsoncore.TypeEmbeddedDocument))
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, 0)
		dst = append(dst, doc...)
	}
	dst = append(dst, 0)
	le.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

func decimalLen(n int) int {
	l := 1
	for ; n >= 10; n /= 10 {
		l++
	}
	return l
}

package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var (
	le           = binary.LittleEndian
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
	errTruncated = errors.New("truncated")
)

// Read reads one complete message from r. It returns the header of the
// outermost message, the decoded (decompressed) message, and the compressor the
// peer used (CompressorNoop when not compressed), so the reply can use the same.
// Errors are of type *ProtocolError, except that a peer closing the connection
// cleanly between messages yields io.EOF itself. Once the header has been read
// it is returned even with an error, so the caller can log the request id.
func Read(r io.Reader) (Header, Message, CompressorID, error) {
	h, msg, comp, _, err := ReadBudgeted(r, nil)
	return h, msg, comp, err
}

// ReadBudgeted is Read that reserves the message's buffers from b (nil: no
// limit) as they grow. It returns how many bytes it reserved, even with an
// error; the caller releases them once done with the message, whose
// documents point into those buffers. Past the budget it fails with a
// ProtocolError wrapping ErrOverBudget.
func ReadBudgeted(r io.Reader, b *Budget) (Header, Message, CompressorID, int, error) {
	a := &account{b: b}
	h, msg, comp, err := readMessage(r, a)
	return h, msg, comp, a.held, err
}

func readMessage(r io.Reader, a *account) (Header, Message, CompressorID, error) {
	var hb [headerLen]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		if err == io.EOF {
			return Header{}, nil, CompressorNoop, io.EOF
		}
		return Header{}, nil, CompressorNoop, protocolErrorf("reading header: %w", err)
	}
	h := decodeHeader(hb[:])
	if err := checkLength(h.OpCode, int(h.MessageLength)); err != nil {
		return h, nil, CompressorNoop, err
	}
	body, err := readFull(r, int(h.MessageLength)-headerLen, a)
	if err != nil {
		return h, nil, CompressorNoop, protocolErrorf("reading %d-byte %v: %w", h.MessageLength, h.OpCode, err)
	}
	if h.OpCode == OpCompressed {
		msg, comp, err := decodeCompressed(h, body, a)
		return h, msg, comp, err
	}
	msg, err := decodeBody(h, body)
	return h, msg, CompressorNoop, err
}

func decodeHeader(b []byte) Header {
	return Header{
		MessageLength: int32(le.Uint32(b)),
		RequestID:     int32(le.Uint32(b[4:])),
		ResponseTo:    int32(le.Uint32(b[8:])),
		OpCode:        OpCode(le.Uint32(b[12:])),
	}
}

func appendHeader(dst []byte, h Header) []byte {
	dst = le.AppendUint32(dst, uint32(h.MessageLength))
	dst = le.AppendUint32(dst, uint32(h.RequestID))
	dst = le.AppendUint32(dst, uint32(h.ResponseTo))
	return le.AppendUint32(dst, uint32(h.OpCode))
}

// minBodyLen is the smallest possible body (the message less its header) of
// each opcode; ok is false for opcodes DumboDB does not speak.
func minBodyLen(op OpCode) (n int, ok bool) {
	const minDoc = 5
	switch op {
	case OpMsg:
		return 4 + 1 + minDoc, true // flags, section kind, body
	case OpQuery:
		return 4 + 1 + 4 + 4 + minDoc, true // flags, "" name, skip, return, query
	case OpReply:
		return 4 + 8 + 4 + 4, true // flags, cursor id, starting from, count
	case OpCompressed:
		return 4 + 4 + 1, true // original opcode, uncompressed size, compressor
	default:
		return 0, false
	}
}

// checkLength rejects a message by its opcode and declared length before
// anything is allocated for it.
func checkLength(op OpCode, length int) error {
	minBody, ok := minBodyLen(op)
	switch {
	case !ok:
		return protocolErrorf("unknown opcode %d", int32(op))
	case length > MaxMessageSize:
		return protocolErrorf("%v of %d bytes exceeds the maximum message size %d", op, length, MaxMessageSize)
	case length < headerLen+minBody:
		return protocolErrorf("%v of %d bytes is shorter than the minimum %d", op, length, headerLen+minBody)
	}
	return nil
}

// growStep is the size up to which readFull trusts a declared length and
// allocates it at once.
const growStep = 1 << 20

// readFull reads exactly n bytes. Above growStep the buffer grows as data
// arrives instead of being sized from the peer's claim, so a peer announcing
// a 48 MB message and then stalling costs only what it actually sent.
// Each growth reserves its whole new array through a first: the array it
// grew out of is garbage the collector has not yet freed, so it stays
// counted until the message is released. What a message holds is then
// what it allocated, under twice the message (1 + 2 + 4 + 8 MiB for one
// of 8 MiB). Counting only each growth's added bytes let the budget's
// connections allocate twice the budget
// (TestMemoryStaysWithinTheDocumentedBounds grew by up to 104 MiB of a
// 103 MiB bound).
func readFull(r io.Reader, n int, a *account) ([]byte, error) {
	first := min(n, growStep)
	if err := a.grow(first); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, first)
	for len(buf) < n {
		if len(buf) == cap(buf) {
			more := min(cap(buf), n-len(buf))
			if err := a.grow(cap(buf) + more); err != nil {
				return buf, err
			}
			buf = slices.Grow(buf, more)
		}
		m, err := io.ReadFull(r, buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, io.ErrUnexpectedEOF
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// decodeBody decodes the body of an uncompressed message (or the
// decompressed content of an OP_COMPRESSED); h is that message's header.
// The decoders return Message rather than their concrete type so that a
// failure yields a nil interface, not an interface holding a nil pointer.
func decodeBody(h Header, body []byte) (Message, error) {
	switch h.OpCode {
	case OpMsg:
		return decodeMsg(h, body)
	case OpQuery:
		return decodeQuery(body)
	case OpReply:
		return decodeReply(body)
	default:
		return nil, protocolErrorf("unsupported opcode %v", h.OpCode)
	}
}

func decodeMsg(h Header, body []byte) (Message, error) {
	m := &Msg{Flags: le.Uint32(body)}
	if unknown := m.Flags & requiredFlagBits &^ (FlagChecksumPresent | FlagMoreToCome); unknown != 0 {
		return nil, protocolErrorf("OP_MSG has unknown required flag bits %#x", unknown)
	}
	sections := body[4:]
	if m.Flags&FlagChecksumPresent != 0 {
		end := len(body) - 4 // minBodyLen leaves room for the checksum
		if got, want := checksum(h, body[:end]), le.Uint32(body[end:]); got != want {
			return nil, protocolErrorf("OP_MSG checksum mismatch: computed %#08x, message has %#08x", got, want)
		}
		sections = body[4:end]
	}
	for len(sections) > 0 {
		var err error
		if sections, err = m.decodeSection(sections); err != nil {
			return nil, err
		}
	}
	if m.Body == nil {
		return nil, protocolErrorf("OP_MSG has no body section")
	}
	return m, nil
}

// decodeSection decodes the section at the start of src into m and returns
// what follows it.
func (m *Msg) decodeSection(src []byte) ([]byte, error) {
	kind, src := src[0], src[1:]
	switch kind {
	case 0:
		if m.Body != nil {
			return nil, protocolErrorf("OP_MSG has more than one body section")
		}
		doc, rest, err := readDocument(src)
		if err != nil {
			return nil, protocolErrorf("OP_MSG body: %w", err)
		}
		m.Body = doc
		return rest, nil
	case 1:
		seq, rest, err := readSequence(src)
		if err != nil {
			return nil, protocolErrorf("OP_MSG document sequence: %w", err)
		}
		m.Sequences = append(m.Sequences, seq)
		return rest, nil
	default:
		return nil, protocolErrorf("OP_MSG has unknown section kind %d", kind)
	}
}

// checksum computes the CRC-32C of a message with header h whose body,
// up to the checksum itself, is body. Taking the header apart from the body
// lets Read check messages whose header it read separately, or rebuilt after
// decompression.
func checksum(h Header, body []byte) uint32 {
	var hb [headerLen]byte
	crc := crc32.Update(0, castagnoli, appendHeader(hb[:0], h))
	return crc32.Update(crc, castagnoli, body)
}

// readSequence reads a kind-1 section: int32 size (including itself), a
// cstring identifier, then documents filling the rest.
func readSequence(src []byte) (Sequence, []byte, error) {
	if len(src) < 4 {
		return Sequence{}, nil, errTruncated
	}
	size := int64(int32(le.Uint32(src)))
	if size < 5 || size > int64(len(src)) {
		return Sequence{}, nil, fmt.Errorf("size %d out of bounds [5, %d]", size, len(src))
	}
	sec, rest := src[4:size], src[size:]
	nul := bytes.IndexByte(sec, 0)
	if nul < 0 {
		return Sequence{}, nil, errors.New("identifier is not NUL-terminated")
	}
	docs, err := readDocuments(sec[nul+1:])
	if err != nil {
		return Sequence{}, nil, err
	}
	return Sequence{Identifier: string(sec[:nul]), Documents: docs}, rest, nil
}

// readDocuments splits src, which must consist of whole documents, into
// validated documents. It counts them first so the slice is allocated once,
// whatever the batch size.
func readDocuments(src []byte) ([]bsoncore.Document, error) {
	n := 0
	for rest := src; len(rest) > 0; n++ {
		var err error
		if _, rest, err = readDocument(rest); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
	}
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		size := le.Uint32(src) // validated by the first pass
		docs[i], src = src[:size], src[size:]
	}
	return docs, nil
}

// readDocument reads one validated document from the start of src and
// returns it and what follows.
func readDocument(src []byte) (bsoncore.Document, []byte, error) {
	if len(src) < 4 {
		return nil, nil, errTruncated
	}
	size := int64(int32(le.Uint32(src)))
	if size < 5 || size > int64(len(src)) {
		return nil, nil, fmt.Errorf("document size %d out of bounds [5, %d]", size, len(src))
	}
	doc := bsoncore.Document(src[:size])
	if err := validateDocument(doc, 1); err != nil {
		return nil, nil, err
	}
	return doc, src[size:], nil
}

func decodeQuery(body []byte) (Message, error) {
	q := &Query{Flags: int32(le.Uint32(body))}
	rest := body[4:]
	nul := bytes.IndexByte(rest, 0)
	if nul < 0 {
		return nil, protocolErrorf("OP_QUERY collection name is not NUL-terminated")
	}
	q.FullCollectionName, rest = string(rest[:nul]), rest[nul+1:]
	if len(rest) < 8 {
		return nil, protocolErrorf("OP_QUERY truncated after the collection name")
	}
	q.NumberToSkip = int32(le.Uint32(rest))
	q.NumberToReturn = int32(le.Uint32(rest[4:]))
	var err error
	if q.Query, rest, err = readDocument(rest[8:]); err != nil {
		return nil, protocolErrorf("OP_QUERY query: %w", err)
	}
	if len(rest) == 0 {
		return q, nil
	}
	if q.ReturnFieldsSelector, rest, err = readDocument(rest); err != nil {
		return nil, protocolErrorf("OP_QUERY returnFieldsSelector: %w", err)
	}
	if len(rest) != 0 {
		return nil, protocolErrorf("OP_QUERY has %d trailing bytes", len(rest))
	}
	return q, nil
}

func decodeReply(body []byte) (Message, error) {
	r := &Reply{
		ResponseFlags: int32(le.Uint32(body)),
		CursorID:      int64(le.Uint64(body[4:])),
		StartingFrom:  int32(le.Uint32(body[12:])),
	}
	numberReturned := int32(le.Uint32(body[16:]))
	docs, err := readDocuments(body[20:])
	if err != nil {
		return nil, protocolErrorf("OP_REPLY: %w", err)
	}
	if int(numberReturned) != len(docs) {
		return nil, protocolErrorf("OP_REPLY numberReturned is %d but it holds %d documents", numberReturned, len(docs))
	}
	r.Documents = docs
	return r, nil
}

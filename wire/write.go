package wire

import (
	"hash/crc32"
	"io"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Write writes msg as one message with the given requestID/responseTo. When
// comp != CompressorNoop the message is wrapped in OP_COMPRESSED. For *Msg with
// FlagChecksumPresent set, a CRC-32C is appended (to the uncompressed message,
// before any compression, as the receiver checks it after decompressing).
// The message is built in one buffer and written with a single w.Write, so
// an encoding error sends nothing, and goroutines sharing a net.Conn never
// interleave their messages.
func Write(w io.Writer, requestID, responseTo int32, msg Message, comp CompressorID) error {
	buf := getBuffer()
	defer putBuffer(buf)
	var err error
	if *buf, err = appendMessage((*buf)[:0], requestID, responseTo, msg); err != nil {
		return err
	}
	out := *buf
	if comp != CompressorNoop {
		cbuf := getBuffer()
		defer putBuffer(cbuf)
		if *cbuf, err = appendCompressed((*cbuf)[:0], out, comp); err != nil {
			return err
		}
		out = *cbuf
	}
	if _, err := w.Write(out); err != nil {
		return protocolErrorf("writing %d-byte message: %w", len(out), err)
	}
	return nil
}

// maxPooledBuffer bounds the buffers kept for reuse: a rare huge reply should
// not stay pinned in every P's pool.
const maxPooledBuffer = 4 << 20

// buffers recycles Write's scratch space: a reply is built, written and
// dropped once per request, so in steady state Write allocates nothing.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		*b = nil
	}
	buffers.Put(b)
}

// appendMessage appends msg, header included, to dst.
func appendMessage(dst []byte, requestID, responseTo int32, msg Message) ([]byte, error) {
	start := len(dst)
	// The length and opcode are filled in once the body is known to be good.
	dst = appendHeader(dst, Header{RequestID: requestID, ResponseTo: responseTo})
	dst, err := appendBody(dst, msg)
	if err != nil {
		return nil, err
	}
	le.PutUint32(dst[start+12:], uint32(msg.opCode()))
	if m, ok := msg.(*Msg); !ok || m.Flags&FlagChecksumPresent == 0 {
		return finishMessage(dst, start)
	}
	// The checksum covers the header, so the length, which counts the
	// checksum, must be in place first.
	dst = append(dst, 0, 0, 0, 0)
	if dst, err = finishMessage(dst, start); err != nil {
		return nil, err
	}
	end := len(dst) - 4
	le.PutUint32(dst[end:], crc32.Checksum(dst[start:end], castagnoli))
	return dst, nil
}

// appendBody appends the body (the message less its header) of msg.
func appendBody(dst []byte, msg Message) ([]byte, error) {
	switch m := msg.(type) {
	case *Msg:
		if m != nil {
			return m.appendBody(dst)
		}
	case *Query:
		if m != nil {
			return m.appendBody(dst)
		}
	case *Reply:
		if m != nil {
			return m.appendBody(dst)
		}
	}
	return nil, protocolErrorf("cannot write a nil %T message", msg)
}

// finishMessage checks the size of the message that starts at dst[start:]
// and fills in its length.
func finishMessage(dst []byte, start int) ([]byte, error) {
	n := len(dst) - start
	if n > MaxMessageSize {
		return nil, protocolErrorf("message of %d bytes exceeds the maximum message size %d", n, MaxMessageSize)
	}
	le.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

func (m *Msg) appendBody(dst []byte) ([]byte, error) {
	dst = le.AppendUint32(dst, m.Flags)
	dst = append(dst, 0)
	dst, err := appendDocument(dst, m.Body)
	if err != nil {
		return nil, protocolErrorf("OP_MSG body: %w", err)
	}
	for _, s := range m.Sequences {
		if strings.IndexByte(s.Identifier, 0) >= 0 {
			return nil, protocolErrorf("OP_MSG document sequence identifier %q contains NUL", s.Identifier)
		}
		dst = append(dst, 1)
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0) // size, filled in below
		dst = append(dst, s.Identifier...)
		dst = append(dst, 0)
		for i, doc := range s.Documents {
			if dst, err = appendDocument(dst, doc); err != nil {
				return nil, protocolErrorf("OP_MSG document sequence %q document %d: %w", s.Identifier, i, err)
			}
		}
		le.PutUint32(dst[start:], uint32(len(dst)-start))
	}
	return dst, nil
}

func (q *Query) appendBody(dst []byte) ([]byte, error) {
	if strings.IndexByte(q.FullCollectionName, 0) >= 0 {
		return nil, protocolErrorf("OP_QUERY collection name %q contains NUL", q.FullCollectionName)
	}
	dst = le.AppendUint32(dst, uint32(q.Flags))
	dst = append(dst, q.FullCollectionName...)
	dst = append(dst, 0)
	dst = le.AppendUint32(dst, uint32(q.NumberToSkip))
	dst = le.AppendUint32(dst, uint32(q.NumberToReturn))
	dst, err := appendDocument(dst, q.Query)
	if err != nil {
		return nil, protocolErrorf("OP_QUERY query: %w", err)
	}
	if q.ReturnFieldsSelector == nil {
		return dst, nil
	}
	if dst, err = appendDocument(dst, q.ReturnFieldsSelector); err != nil {
		return nil, protocolErrorf("OP_QUERY returnFieldsSelector: %w", err)
	}
	return dst, nil
}

func (r *Reply) appendBody(dst []byte) ([]byte, error) {
	dst = le.AppendUint32(dst, uint32(r.ResponseFlags))
	dst = le.AppendUint64(dst, uint64(r.CursorID))
	dst = le.AppendUint32(dst, uint32(r.StartingFrom))
	dst = le.AppendUint32(dst, uint32(len(r.Documents)))
	for i, doc := range r.Documents {
		var err error
		if dst, err = appendDocument(dst, doc); err != nil {
			return nil, protocolErrorf("OP_REPLY document %d: %w", i, err)
		}
	}
	return dst, nil
}

// appendDocument appends doc after checking its framing, which is cheap and
// catches nil or truncated documents; full validation is the builder's job.
func appendDocument(dst []byte, doc bsoncore.Document) ([]byte, error) {
	if err := checkFraming(doc); err != nil {
		return nil, err
	}
	return append(dst, doc...), nil
}

// Package wire owns DumboDB's MongoDB wire-protocol message framing: the
// standard 16-byte header, OP_MSG (body and document-sequence sections, the
// optional CRC-32C checksum), the legacy OP_QUERY/OP_REPLY pair used for the
// first handshake, and OP_COMPRESSED with the noop, snappy, zlib and zstd
// compressors.
//
// It knows nothing about commands: Read turns bytes from a connection into a
// validated Message, Write turns a Message into bytes. Every document handed
// out by Read has been checked to be well-formed BSON (nested documents
// included), so the layers above may use bsoncore accessors without guarding
// against malformed input.
package wire

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

const (
	// MaxMessageSize is the largest message, header included, that Read
	// accepts and Write produces (mongod's maxMessageSizeBytes).
	MaxMessageSize = 48_000_000
	// MaxDocumentSize is the largest user document (mongod's
	// maxBsonObjectSize). It is advertised in hello and enforced by the
	// command layer, not here: command bodies wrapping a maximal document
	// are legitimately a little larger.
	MaxDocumentSize = 16 * 1024 * 1024
)

// headerLen is the size of the standard message header.
const headerLen = 16

// OpCode identifies the kind of a message.
type OpCode int32

// The opcodes DumboDB speaks. The other legacy opcodes were removed from
// MongoDB 5.1 and are rejected as unknown.
const (
	OpReply      OpCode = 1
	OpQuery      OpCode = 2004
	OpCompressed OpCode = 2012
	OpMsg        OpCode = 2013
)

// String returns the spec's name for the opcode.
func (c OpCode) String() string {
	switch c {
	case OpReply:
		return "OP_REPLY"
	case OpQuery:
		return "OP_QUERY"
	case OpCompressed:
		return "OP_COMPRESSED"
	case OpMsg:
		return "OP_MSG"
	default:
		return fmt.Sprintf("opcode(%d)", int32(c))
	}
}

// Header is the standard message header.
type Header struct {
	MessageLength, RequestID, ResponseTo int32
	OpCode                               OpCode
}

// CompressorID identifies an OP_COMPRESSED compressor; the values are the
// spec's.
type CompressorID uint8

// Compressor ids as in the spec.
const (
	CompressorNoop   CompressorID = 0
	CompressorSnappy CompressorID = 1
	CompressorZlib   CompressorID = 2
	CompressorZstd   CompressorID = 3
)

// String returns the name used in hello's compression negotiation.
func (c CompressorID) String() string {
	switch c {
	case CompressorNoop:
		return "noop"
	case CompressorSnappy:
		return "snappy"
	case CompressorZlib:
		return "zlib"
	case CompressorZstd:
		return "zstd"
	default:
		return fmt.Sprintf("compressor(%d)", uint8(c))
	}
}

// CompressorByName maps "snappy", "zlib" and "zstd" to ids (for hello's
// `compression` negotiation). "noop" is not negotiable and reports false.
func CompressorByName(name string) (CompressorID, bool) {
	switch name {
	case "snappy":
		return CompressorSnappy, true
	case "zlib":
		return CompressorZlib, true
	case "zstd":
		return CompressorZstd, true
	default:
		return CompressorNoop, false
	}
}

// OP_MSG flag bits.
const (
	FlagChecksumPresent uint32 = 1 << 0
	FlagMoreToCome      uint32 = 1 << 1
	FlagExhaustAllowed  uint32 = 1 << 16
)

// requiredFlagBits are the low 16 flag bits: the spec requires a receiver to
// reject a message with any of them set that it does not understand, whereas
// unknown high bits are optional and may be ignored.
const requiredFlagBits uint32 = 0xFFFF

// Sequence is an OP_MSG kind-1 section: documents the driver sent beside the
// body instead of inside it (for example insert's "documents").
type Sequence struct {
	Identifier string
	Documents  []bsoncore.Document
}

// Msg is an OP_MSG message. Flags keeps every bit as received; on Write,
// FlagChecksumPresent asks for a checksum to be appended.
type Msg struct {
	Flags     uint32
	Body      bsoncore.Document
	Sequences []Sequence
}

// Query is a legacy OP_QUERY message; drivers still open with one to send
// hello/isMaster before they know the server speaks OP_MSG.
type Query struct {
	Flags                int32
	FullCollectionName   string
	NumberToSkip         int32
	NumberToReturn       int32
	Query                bsoncore.Document
	ReturnFieldsSelector bsoncore.Document // nil if absent
}

// Reply is a legacy OP_REPLY message, the answer to a Query.
type Reply struct {
	ResponseFlags int32
	CursorID      int64
	StartingFrom  int32
	Documents     []bsoncore.Document
}

// Message is *Msg, *Query or *Reply.
type Message interface{ opCode() OpCode }

func (*Msg) opCode() OpCode   { return OpMsg }
func (*Query) opCode() OpCode { return OpQuery }
func (*Reply) opCode() OpCode { return OpReply }

// ProtocolError reports a message that cannot be framed or unframed, or an
// I/O failure while reading one. The server answers it by closing the
// connection. Unwrap exposes the underlying I/O error, if any.
type ProtocolError struct {
	Msg string
	err error
}

func (e *ProtocolError) Error() string { return "wire: " + e.Msg }

// Unwrap returns the error that caused e, or nil.
func (e *ProtocolError) Unwrap() error { return e.err }

// protocolErrorf builds a ProtocolError; a %w verb in format becomes the
// error's cause.
func protocolErrorf(format string, args ...any) *ProtocolError {
	err := fmt.Errorf(format, args...)
	return &ProtocolError{Msg: err.Error(), err: errors.Unwrap(err)}
}

package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// readErr reads raw and fails unless Read returns a *ProtocolError whose
// message contains want.
func readErr(t *testing.T, raw []byte, want string) error {
	t.Helper()
	_, msg, _, err := Read(bytes.NewReader(raw))
	var pe *ProtocolError
	if !errors.As(err, &pe) || msg != nil {
		t.Fatalf("Read = %#v, %v; want only a *ProtocolError", msg, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Read error %q does not mention %q", err, want)
	}
	return err
}

// docBytes frames elements as a document.
func docBytes(elems ...[]byte) []byte {
	var body []byte
	for _, e := range elems {
		body = append(body, e...)
	}
	return append(append(u32(uint32(4+len(body)+1)), body...), 0)
}

func withLastByte(b []byte, v byte) []byte {
	b[len(b)-1] = v
	return b
}

// withChecksum overwrites the last four bytes of raw with its CRC-32C.
func withChecksum(raw []byte) []byte {
	end := len(raw) - 4
	le.PutUint32(raw[end:], crc32c(raw[:end]))
	return raw
}

// nested returns a document nesting depth levels deep, counting itself.
func nested(depth int) []byte {
	d := docBytes()
	for range depth - 1 {
		d = docBytes([]byte{byte(bsoncore.TypeEmbeddedDocument), 'a', 0}, d)
	}
	return d
}

func TestReadCleanEOF(t *testing.T) {
	if _, _, _, err := Read(bytes.NewReader(nil)); err != io.EOF {
		t.Fatalf("Read of an empty stream = %v, want io.EOF itself", err)
	}
}

func TestReadTruncated(t *testing.T) {
	valid := encode(t, 1, 0, insertMsg(t, 2), CompressorNoop)
	for name, raw := range map[string][]byte{
		"header":  valid[:10],
		"body":    valid[:len(valid)-1],
		"no body": valid[:headerLen],
	} {
		t.Run(name, func(t *testing.T) {
			if err := readErr(t, raw, "reading"); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %v does not wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

func TestReadIOError(t *testing.T) {
	r := io.MultiReader(bytes.NewReader(make([]byte, 5)), errReader{})
	_, _, _, err := Read(r)
	var pe *ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Read = %v, want a *ProtocolError wrapping io.ErrClosedPipe", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestReadLengthRejectedBeforeBody(t *testing.T) {
	tests := map[string]struct {
		length int32
		op     OpCode
		want   string
	}{
		"oversized":            {MaxMessageSize + 1, OpMsg, "exceeds"},
		"max int32":            {1<<31 - 1, OpMsg, "exceeds"},
		"negative":             {-1, OpMsg, "shorter"},
		"shorter than header":  {15, OpMsg, "shorter"},
		"header only":          {16, OpMsg, "shorter"},
		"msg too short":        {16 + 9, OpMsg, "shorter"},
		"query too short":      {16 + 17, OpQuery, "shorter"},
		"reply too short":      {16 + 19, OpReply, "shorter"},
		"compressed too short": {16 + 8, OpCompressed, "shorter"},
		"unknown opcode":       {100, 2010, "unknown opcode 2010"},
		"opcode zero":          {100, 0, "unknown opcode 0"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			h := make([]byte, headerLen)
			le.PutUint32(h, uint32(tt.length))
			le.PutUint32(h[12:], uint32(tt.op))
			// Only the header is there: reaching for the body would
			// report EOF instead of the length.
			err := readErr(t, h, tt.want)
			if errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Read tried to read the body: %v", err)
			}
		})
	}
}

// TestReadDoesNotTrustLength sends a header announcing a maximal message and
// then stalls: Read must fail without having allocated the announced size.
func TestReadDoesNotTrustLength(t *testing.T) {
	h := make([]byte, headerLen+100)
	le.PutUint32(h, MaxMessageSize)
	le.PutUint32(h[12:], uint32(OpMsg))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, _, err := Read(bytes.NewReader(h))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read = %v, want unexpected EOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*growStep {
		t.Errorf("Read allocated %d bytes for 100 bytes of body", grew)
	}
}

func TestReadMsgErrors(t *testing.T) {
	doc := mustDoc(t, "ping", int32(1))
	seq := func(id string, docs ...[]byte) []byte {
		var b []byte
		for _, d := range docs {
			b = append(b, d...)
		}
		size := 4 + len(id) + 1 + len(b)
		return append(append(append(append([]byte{1}, u32(uint32(size))...), id...), 0), b...)
	}
	body := append([]byte{0}, doc...)
	tests := map[string]struct {
		raw  []byte
		want string
	}{
		"bad section kind":     {rawMessage(OpMsg, u32(0), body, []byte{2}, doc), "unknown section kind 2"},
		"two body sections":    {rawMessage(OpMsg, u32(0), body, body), "more than one body"},
		"no body section":      {rawMessage(OpMsg, u32(0), seq("documents", doc)), "no body"},
		"unknown required bit": {rawMessage(OpMsg, u32(1<<2), body), "unknown required flag bits 0x4"},
		"body past end":        {rawMessage(OpMsg, u32(0), body[:len(body)-1]), "OP_MSG body"},
		"body size too big":    {rawMessage(OpMsg, u32(0), []byte{0}, u32(1000), make([]byte, 10)), "out of bounds"},
		"body size negative":   {rawMessage(OpMsg, u32(0), []byte{0}, u32(0xFFFFFFFF), make([]byte, 10)), "out of bounds"},
		"section kind only":    {rawMessage(OpMsg, u32(0), body, []byte{1}), "truncated"},
		"sequence too big":     {rawMessage(OpMsg, u32(0), body, []byte{1}, u32(1000), []byte("d\x00")), "out of bounds"},
		"sequence too small":   {rawMessage(OpMsg, u32(0), body, []byte{1}, u32(4), []byte("d\x00")), "out of bounds"},
		"identifier no NUL":    {rawMessage(OpMsg, u32(0), body, []byte{1}, u32(6), []byte("dd")), "NUL"},
		"sequence doc partial": {rawMessage(OpMsg, u32(0), body, seq("d", doc, doc[:6])), "document 1"},
		"sequence doc invalid": {rawMessage(OpMsg, u32(0), body, seq("d", doc, []byte{6, 0, 0, 0, 1, 0})), "document 1"},
		"checksummed, short":   {withChecksum(rawMessage(OpMsg, u32(1), []byte{0, 5}, u32(0))), "OP_MSG body: truncated"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { readErr(t, tt.raw, tt.want) })
	}
}

func TestReadChecksumMismatch(t *testing.T) {
	valid := encode(t, 1, 0, &Msg{Flags: FlagChecksumPresent, Body: mustDoc(t, "ping", int32(1))}, CompressorNoop)
	for _, i := range []int{4, 8, headerLen + 2, len(valid) - 6, len(valid) - 1} {
		raw := bytes.Clone(valid)
		raw[i] ^= 0x10
		readErr(t, raw, "checksum mismatch")
	}
}

func TestReadChecksumInsideCompressed(t *testing.T) {
	msg := &Msg{Flags: FlagChecksumPresent, Body: mustDoc(t, "ping", int32(1))}
	inner := encode(t, 5, 6, msg, CompressorNoop)
	// The checksum covers the uncompressed message with its own header, so
	// a compressed message whose ids differ from the inner ones must fail.
	good := rawMessage(OpCompressed, u32(uint32(OpMsg)), u32(uint32(len(inner)-headerLen)), []byte{0}, inner[headerLen:])
	le.PutUint32(good[4:], 5)
	le.PutUint32(good[8:], 6)
	if _, got, _, err := Read(bytes.NewReader(good)); err != nil || got.(*Msg).Flags != FlagChecksumPresent {
		t.Fatalf("Read = %v, %v", got, err)
	}
	bad := bytes.Clone(good)
	le.PutUint32(bad[4:], 7)
	readErr(t, bad, "checksum mismatch")
}

func TestReadInvalidBSON(t *testing.T) {
	str := func(key string, length uint32, content string) []byte {
		return append(append(append([]byte{byte(bsoncore.TypeString)}, key+"\x00"...), u32(length)...), content...)
	}
	tests := map[string][]byte{
		"unknown element type":   docBytes([]byte{0x20, 'a', 0}),
		"missing terminator":     withLastByte(docBytes(str("s", 2, "a\x00")), 1),
		"string without NUL":     docBytes(str("s", 2, "ab")),
		"string length zero":     docBytes(str("s", 0, "")),
		"nested bad string":      docBytes([]byte{byte(bsoncore.TypeEmbeddedDocument), 's', 0}, docBytes(str("x", 0, ""))),
		"array with bad string":  docBytes([]byte{byte(bsoncore.TypeArray), 'a', 0}, docBytes(str("0", 3, "ab"))),
		"nested bad framing":     docBytes([]byte{byte(bsoncore.TypeEmbeddedDocument), 's', 0}, []byte{6, 0, 0, 0, 0, 0}),
		"nested too short":       docBytes([]byte{byte(bsoncore.TypeEmbeddedDocument), 's', 0, 4, 0, 0, 0}),
		"too deep":               nested(maxNestingDepth + 1),
		"bad boolean":            docBytes([]byte{byte(bsoncore.TypeBoolean), 'b', 0, 2}),
		"bad old binary":         docBytes([]byte{byte(bsoncore.TypeBinary), 'b', 0}, u32(6), []byte{2}, u32(9), []byte{1, 2}),
		"short old binary":       docBytes([]byte{byte(bsoncore.TypeBinary), 'b', 0}, u32(2), []byte{2, 1, 2}),
		"bad dbpointer":          docBytes([]byte{byte(bsoncore.TypeDBPointer), 'p', 0}, u32(2), []byte("ab"), make([]byte, 12)),
		"code with scope short":  docBytes([]byte{byte(bsoncore.TypeCodeWithScope), 'c', 0}, u32(13), u32(1), []byte{0, 5, 0, 0, 0}),
		"code with scope code":   docBytes([]byte{byte(bsoncore.TypeCodeWithScope), 'c', 0}, u32(14), u32(9), []byte{0}, docBytes()),
		"code with scope scope":  docBytes([]byte{byte(bsoncore.TypeCodeWithScope), 'c', 0}, u32(15), u32(2), []byte("a\x00"), []byte{6, 0, 0, 0, 0}),
		"code with scope nested": docBytes([]byte{byte(bsoncore.TypeCodeWithScope), 'c', 0}, u32(21), u32(2), []byte("a\x00"), docBytes(str("", 0, ""))),
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			readErr(t, rawMessage(OpMsg, u32(0), []byte{0}, doc), "OP_MSG body")
			readErr(t, rawMessage(OpQuery, u32(0), []byte("a.b\x00"), u32(0), u32(1), doc), "OP_QUERY query")
			readErr(t, rawMessage(OpReply, u32(0), make([]byte, 8), u32(0), u32(1), doc), "OP_REPLY")
		})
	}
}

func TestReadValidBSONEdgeCases(t *testing.T) {
	tests := map[string][]byte{
		"deepest allowed": nested(maxNestingDepth),
		"code with scope": docBytes([]byte{byte(bsoncore.TypeCodeWithScope), 'c', 0}, u32(15), u32(2), []byte("a\x00"), docBytes()),
		"old binary":      docBytes([]byte{byte(bsoncore.TypeBinary), 'b', 0}, u32(6), []byte{2}, u32(2), []byte{1, 2}),
		"dbpointer":       docBytes([]byte{byte(bsoncore.TypeDBPointer), 'p', 0}, u32(2), []byte("a\x00"), make([]byte, 12)),
		"empty key":       docBytes([]byte{byte(bsoncore.TypeNull), 0}),
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, msg, _, err := Read(bytes.NewReader(rawMessage(OpMsg, u32(0), []byte{0}, doc)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(msg.(*Msg).Body, doc) {
				t.Error("body changed")
			}
		})
	}
}

func TestReadQueryErrors(t *testing.T) {
	doc := mustDoc(t, "isMaster", int32(1))
	tests := map[string]struct {
		raw  []byte
		want string
	}{
		"name without NUL": {rawMessage(OpQuery, u32(0), bytes.Repeat([]byte("a"), 20)), "not NUL-terminated"},
		"truncated counts": {rawMessage(OpQuery, u32(0), bytes.Repeat([]byte("a"), 18), []byte{0}, u32(0)), "truncated"},
		"query past end":   {rawMessage(OpQuery, u32(0), []byte("a\x00"), u32(0), u32(0), doc[:len(doc)-1]), "query"},
		"bad selector":     {rawMessage(OpQuery, u32(0), []byte("a\x00"), u32(0), u32(0), doc, []byte{0, 0}), "returnFieldsSelector"},
		"trailing bytes":   {rawMessage(OpQuery, u32(0), []byte("a\x00"), u32(0), u32(0), doc, doc, []byte{1}), "1 trailing bytes"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { readErr(t, tt.raw, tt.want) })
	}
}

func TestReadReplyErrors(t *testing.T) {
	doc := mustDoc(t, "ok", 1.0)
	prefix := append(u32(0), make([]byte, 12)...) // flags, cursor id, starting from
	tests := map[string]struct {
		raw  []byte
		want string
	}{
		"count too high": {rawMessage(OpReply, prefix, u32(2), doc), "numberReturned is 2 but it holds 1"},
		"count too low":  {rawMessage(OpReply, prefix, u32(0), doc), "numberReturned is 0"},
		"count negative": {rawMessage(OpReply, prefix, u32(0xFFFFFFFF)), "numberReturned is -1"},
		"partial doc":    {rawMessage(OpReply, prefix, u32(1), doc, []byte{1}), "document 1"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { readErr(t, tt.raw, tt.want) })
	}
}

func TestReadCompressedErrors(t *testing.T) {
	inner := encode(t, 1, 0, insertMsg(t, 3), CompressorNoop)[headerLen:]
	size := int32(len(inner))
	compressed := func(comp CompressorID, src []byte) []byte {
		out, err := codecs[comp].compress(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tests := map[string]struct {
		raw  []byte
		want string
	}{
		"unknown compressor":   {compressedMessage(OpMsg, size, 4, inner), "unknown compressor id 4"},
		"nested compressed":    {compressedMessage(OpCompressed, size, 0, inner), "unsupported opcode 2012"},
		"unknown original":     {compressedMessage(2010, size, 0, inner), "unsupported opcode 2010"},
		"negative size":        {compressedMessage(OpMsg, -1, 0, inner), "out of bounds"},
		"size over max":        {compressedMessage(OpMsg, MaxMessageSize-headerLen+1, 0, inner), "out of bounds"},
		"size under minimum":   {compressedMessage(OpMsg, 9, 0, inner[:9]), "out of bounds"},
		"noop size mismatch":   {compressedMessage(OpMsg, size+1, 0, inner), "header declares"},
		"garbage inner msg":    {compressedMessage(OpMsg, 12, 0, make([]byte, 12)), "OP_MSG"},
		"inner reply mismatch": {compressedMessage(OpReply, 20, 0, append(make([]byte, 16), 1, 0, 0, 0)), "numberReturned"},
	}
	for _, comp := range []CompressorID{CompressorSnappy, CompressorZlib, CompressorZstd} {
		payload := compressed(comp, inner)
		tests[comp.String()+" declares more"] = struct {
			raw  []byte
			want string
		}{compressedMessage(OpMsg, size+1, comp, payload), "declare"}
		tests[comp.String()+" declares less"] = struct {
			raw  []byte
			want string
		}{compressedMessage(OpMsg, size-1, comp, payload), "declare"}
		tests[comp.String()+" garbage"] = struct {
			raw  []byte
			want string
		}{compressedMessage(OpMsg, size, comp, bytes.Repeat([]byte{0xA5, 0x17}, 40)), comp.String() + " payload"}
		tests[comp.String()+" truncated"] = struct {
			raw  []byte
			want string
		}{compressedMessage(OpMsg, size, comp, payload[:len(payload)-3]), comp.String() + " payload"}
		tests[comp.String()+" empty"] = struct {
			raw  []byte
			want string
		}{compressedMessage(OpMsg, size, comp, nil), comp.String() + " payload"}
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { readErr(t, tt.raw, tt.want) })
	}
}

func TestReadZlibBadTrailer(t *testing.T) {
	inner := encode(t, 1, 0, insertMsg(t, 3), CompressorNoop)[headerLen:]
	payload, err := compressZlib(nil, inner)
	if err != nil {
		t.Fatal(err)
	}
	payload[len(payload)-1] ^= 1 // the Adler-32 of the content
	readErr(t, compressedMessage(OpMsg, int32(len(inner)), CompressorZlib, payload), "checksum")
}

// TestReadSnappyClaimTooLarge sends a tiny snappy block whose length prefix
// claims far more than such a block can hold.
func TestReadSnappyClaimTooLarge(t *testing.T) {
	const claim = 1 << 20
	block := append(binary.AppendUvarint(nil, claim), 0, 0, 0)
	readErr(t, compressedMessage(OpMsg, claim, CompressorSnappy, block), "cannot expand")
}

func TestReadTooDeepErrorIsShort(t *testing.T) {
	err := readErr(t, rawMessage(OpMsg, u32(0), []byte{0}, nested(10*maxNestingDepth)), "nested deeper than 200")
	if len(err.Error()) > 100 {
		t.Errorf("error is %d bytes long: %q", len(err.Error()), err)
	}
}

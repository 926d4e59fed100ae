package wire

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
)

// codec is one OP_COMPRESSED compressor. compress appends the compressed
// form of src to dst; decompress returns the content of src, which the
// header says is size bytes long (the caller checks that it is). Noop has no
// compress: Write sends such messages unwrapped, as the API asks.
type codec struct {
	compress   func(dst, src []byte) ([]byte, error)
	decompress func(src []byte, size int) ([]byte, error)
}

var codecs = [...]codec{
	CompressorNoop:   {nil, decompressNoop},
	CompressorSnappy: {compressSnappy, decompressSnappy},
	CompressorZlib:   {compressZlib, decompressZlib},
	CompressorZstd:   {compressZstd, decompressZstd},
}

func codecFor(id CompressorID) (codec, bool) {
	if int(id) >= len(codecs) {
		return codec{}, false
	}
	return codecs[id], true
}

// decodeCompressed unwraps an OP_COMPRESSED body and decodes the message
// inside. The inner header is rebuilt from the outer one, as mongod does, so
// that an inner OP_MSG checksum (computed by the sender before compressing)
// verifies.
func decodeCompressed(h Header, body []byte, a *account) (Message, CompressorID, error) {
	original := OpCode(le.Uint32(body))
	size := int64(int32(le.Uint32(body[4:])))
	comp := CompressorID(body[8])
	minBody, ok := minBodyLen(original)
	if !ok || original == OpCompressed {
		return nil, comp, protocolErrorf("OP_COMPRESSED wraps unsupported opcode %d", int32(original))
	}
	if size < int64(minBody) || size > MaxMessageSize-headerLen {
		return nil, comp, protocolErrorf("OP_COMPRESSED uncompressedSize %d out of bounds [%d, %d]",
			size, minBody, MaxMessageSize-headerLen)
	}
	c, ok := codecFor(comp)
	if !ok {
		return nil, comp, protocolErrorf("OP_COMPRESSED has unknown compressor id %d", uint8(comp))
	}
	if err := a.grow(int(size)); err != nil {
		return nil, comp, protocolErrorf("OP_COMPRESSED of %d bytes uncompressed: %w", size, err)
	}
	inner, err := c.decompress(body[9:], int(size))
	if err == nil && len(inner) != int(size) {
		err = sizeMismatch(len(inner), int(size))
	}
	if err != nil {
		return nil, comp, protocolErrorf("OP_COMPRESSED %v payload: %w", comp, err)
	}
	ih := Header{MessageLength: int32(headerLen + size), RequestID: h.RequestID, ResponseTo: h.ResponseTo, OpCode: original}
	msg, err := decodeBody(ih, inner)
	return msg, comp, err
}

// appendCompressed appends msg, a complete uncompressed message, wrapped in
// OP_COMPRESSED with the same request and response ids.
func appendCompressed(dst, msg []byte, comp CompressorID) ([]byte, error) {
	c, ok := codecFor(comp)
	if !ok || c.compress == nil {
		return nil, protocolErrorf("cannot compress with compressor id %d", uint8(comp))
	}
	start := len(dst)
	h := decodeHeader(msg)
	original := h.OpCode
	h.OpCode = OpCompressed
	dst = appendHeader(dst, h) // MessageLength is fixed below
	dst = le.AppendUint32(dst, uint32(original))
	dst = le.AppendUint32(dst, uint32(len(msg)-headerLen))
	dst = append(dst, byte(comp))
	dst, err := c.compress(dst, msg[headerLen:])
	if err != nil {
		return nil, protocolErrorf("%v compression: %w", comp, err)
	}
	return finishMessage(dst, start)
}

func sizeMismatch(got, declared int) error {
	return fmt.Errorf("decompressed to %d bytes, header declares %d", got, declared)
}

func decompressNoop(src []byte, _ int) ([]byte, error) { return src, nil }

func compressSnappy(dst, src []byte) ([]byte, error) {
	// MaxEncodedLen is negative only beyond 4 GB; src is at most a message.
	n := snappy.MaxEncodedLen(len(src))
	dst = slices.Grow(dst, n)
	enc := snappy.Encode(dst[len(dst):len(dst)+n], src)
	return dst[:len(dst)+len(enc)], nil
}

// maxSnappyExpansion bounds how far a snappy block can expand: its densest
// element is a 3-byte copy producing 64 bytes.
const maxSnappyExpansion = 22

func decompressSnappy(src []byte, size int) ([]byte, error) {
	// Snappy output is allocated whole, so the block's own length prefix must
	// agree with the header, and be reachable from its size, first: a tiny
	// block merely claiming megabytes must not cost megabytes.
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n != size {
		return nil, sizeMismatch(n, size)
	}
	if n > maxSnappyExpansion*len(src) {
		return nil, fmt.Errorf("%d-byte block cannot expand to %d bytes", len(src), n)
	}
	return snappy.Decode(make([]byte, n), src)
}

// zlib state is large (the compressor's is hundreds of KB), so encoders and
// decoders are pooled and reset per message.
var (
	zlibEncoders = sync.Pool{New: func() any {
		e := new(zlibEncoder)
		e.zw = zlib.NewWriter(&e.out)
		return e
	}}
	zlibDecoders = sync.Pool{New: func() any { return new(zlibDecoder) }}
)

type zlibEncoder struct {
	zw  *zlib.Writer
	out appendWriter
}

// appendWriter is an io.Writer that appends to a slice, letting zlib write
// straight into the outgoing message.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func compressZlib(dst, src []byte) ([]byte, error) {
	e := zlibEncoders.Get().(*zlibEncoder)
	defer zlibEncoders.Put(e)
	e.out.b = dst
	e.zw.Reset(&e.out)
	_, err := e.zw.Write(src)
	if err == nil {
		err = e.zw.Close()
	}
	dst, e.out.b = e.out.b, nil // don't pin the message in the pool
	return dst, err
}

type zlibDecoder struct {
	src bytes.Reader
	zr  io.ReadCloser // nil until the first stream with a valid header
}

func (d *zlibDecoder) reset(src []byte) error {
	d.src.Reset(src)
	if d.zr == nil {
		zr, err := zlib.NewReader(&d.src)
		d.zr = zr
		return err
	}
	return d.zr.(zlib.Resetter).Reset(&d.src, nil)
}

func decompressZlib(src []byte, size int) ([]byte, error) {
	d := zlibDecoders.Get().(*zlibDecoder)
	defer zlibDecoders.Put(d)
	defer d.src.Reset(nil) // don't pin the message in the pool
	if err := d.reset(src); err != nil {
		return nil, err
	}
	// readFull grows with the output rather than trusting size, so a
	// corrupt or hostile stream cannot make us allocate more than it yields.
	// Its size was reserved by decodeCompressed already.
	out, err := readFull(d.zr, size, nil)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, sizeMismatch(len(out), size)
	}
	if err != nil {
		return nil, err
	}
	// The stream must end exactly here; reading to its end also verifies
	// the Adler-32 trailer.
	var extra [1]byte
	switch n, err := io.ReadFull(d.zr, extra[:]); {
	case n > 0:
		return nil, fmt.Errorf("decompressed to more than the declared %d bytes", size)
	case err != io.EOF:
		return nil, err
	}
	return out, nil
}

// zstd encoders and decoders are safe for concurrent EncodeAll/DecodeAll and
// expensive to build, so each is built once, on first use.
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	})
	// The memory cap makes DecodeAll refuse a frame claiming more than a
	// message's worth of content before it allocates for it.
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxMessageSize))
	})
)

func compressZstd(dst, src []byte) ([]byte, error) {
	enc, err := zstdEncoder()
	if err != nil {
		return nil, err
	}
	return enc.EncodeAll(src, dst), nil
}

func decompressZstd(src []byte, _ int) ([]byte, error) {
	dec, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	return dec.DecodeAll(src, nil)
}

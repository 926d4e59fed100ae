package wire

// OP_QUERY is deprecated for commands, but drivers still send their first
// hello in it, so these tests hold the codec to the driver's OP_QUERY too.
//lint:file-ignore SA1019 the driver's OP_QUERY functions are the reference here

import (
	"bytes"
	"hash/crc32"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

// driverMsg builds an OP_MSG the way the official driver does, with a
// "documents" sequence when docs are given.
func driverMsg(reqID int32, flags wiremessage.MsgFlag, body bsoncore.Document, docs ...bsoncore.Document) []byte {
	idx, wm := wiremessage.AppendHeaderStart(nil, reqID, 0, wiremessage.OpMsg)
	wm = wiremessage.AppendMsgFlags(wm, flags)
	wm = wiremessage.AppendMsgSectionType(wm, wiremessage.SingleDocument)
	wm = append(wm, body...)
	if len(docs) > 0 {
		wm = wiremessage.AppendMsgSectionType(wm, wiremessage.DocumentSequence)
		var seqIdx int32
		seqIdx, wm = bsoncore.ReserveLength(wm)
		wm = append(wm, "documents\x00"...)
		for _, d := range docs {
			wm = append(wm, d...)
		}
		wm = bsoncore.UpdateLength(wm, seqIdx, int32(len(wm))-seqIdx)
	}
	if flags&wiremessage.ChecksumPresent != 0 {
		wm = append(wm, 0, 0, 0, 0)
	}
	wm = bsoncore.UpdateLength(wm, idx, int32(len(wm))-idx)
	if flags&wiremessage.ChecksumPresent != 0 {
		end := len(wm) - 4
		le.PutUint32(wm[end:], crc32.Checksum(wm[:end], crc32.MakeTable(crc32.Castagnoli)))
	}
	return wm
}

// driverCompress wraps an uncompressed message in OP_COMPRESSED with the
// driver's own compression code.
func driverCompress(t *testing.T, wm []byte, comp wiremessage.CompressorID) []byte {
	t.Helper()
	_, reqID, respTo, op, rem, ok := wiremessage.ReadHeader(wm)
	if !ok {
		t.Fatal("bad header")
	}
	payload, err := driver.CompressPayload(rem, driver.CompressionOpts{
		Compressor: comp, ZlibLevel: wiremessage.DefaultZlibLevel, ZstdLevel: wiremessage.DefaultZstdLevel,
	})
	if err != nil {
		t.Fatal(err)
	}
	idx, out := wiremessage.AppendHeaderStart(nil, reqID, respTo, wiremessage.OpCompressed)
	out = wiremessage.AppendCompressedOriginalOpCode(out, op)
	out = wiremessage.AppendCompressedUncompressedSize(out, int32(len(rem)))
	out = wiremessage.AppendCompressedCompressorID(out, comp)
	out = wiremessage.AppendCompressedCompressedMessage(out, payload)
	return bsoncore.UpdateLength(out, idx, int32(len(out))-idx)
}

func TestReadDriverMessages(t *testing.T) {
	ins := insertMsg(t, 3)
	docs := ins.Sequences[0].Documents
	hello := mustDoc(t, "isMaster", int32(1), "helloOk", true)

	qIdx, query := wiremessage.AppendHeaderStart(nil, 3, 0, wiremessage.OpQuery)
	query = wiremessage.AppendQueryFlags(query, wiremessage.SecondaryOK)
	query = wiremessage.AppendQueryFullCollectionName(query, "admin.$cmd")
	query = wiremessage.AppendQueryNumberToSkip(query, 0)
	query = wiremessage.AppendQueryNumberToReturn(query, -1)
	query = append(query, hello...)
	query = bsoncore.UpdateLength(query, qIdx, int32(len(query)))

	tests := map[string]struct {
		raw  []byte
		want Message
	}{
		"msg": {driverMsg(1, 0, ins.Body), &Msg{Body: ins.Body}},
		"msg sequence": {driverMsg(1, wiremessage.ExhaustAllowed, ins.Body, docs...),
			&Msg{Flags: FlagExhaustAllowed, Body: ins.Body, Sequences: ins.Sequences}},
		"msg checksum": {driverMsg(1, wiremessage.ChecksumPresent|wiremessage.MoreToCome, ins.Body, docs...),
			&Msg{Flags: FlagChecksumPresent | FlagMoreToCome, Body: ins.Body, Sequences: ins.Sequences}},
		"query": {query, &Query{Flags: int32(wiremessage.SecondaryOK), FullCollectionName: "admin.$cmd", NumberToReturn: -1, Query: hello}},
	}
	for name, tt := range tests {
		for _, comp := range []wiremessage.CompressorID{wiremessage.CompressorNoOp, wiremessage.CompressorSnappy, wiremessage.CompressorZLib, wiremessage.CompressorZstd} {
			t.Run(name+"/"+comp.String(), func(t *testing.T) {
				raw := tt.raw
				if comp != wiremessage.CompressorNoOp {
					raw = driverCompress(t, raw, comp)
				}
				h, got, gotComp, err := Read(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if h.MessageLength != int32(len(raw)) {
					t.Errorf("MessageLength = %d, want %d", h.MessageLength, len(raw))
				}
				if comp != wiremessage.CompressorNoOp && gotComp != CompressorID(comp) {
					t.Errorf("compressor = %v, want %v", gotComp, comp)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Read = %#v, want %#v", got, tt.want)
				}
			})
		}
	}
}

// parseWithDriver decodes a message with the driver's Read* functions,
// decompressing it first if needed, and returns the header fields and the
// uncompressed body.
func parseWithDriver(t *testing.T, wm []byte) (reqID, respTo int32, op wiremessage.OpCode, body []byte) {
	t.Helper()
	length, reqID, respTo, op, rem, ok := wiremessage.ReadHeader(wm)
	if !ok || int(length) != len(wm) {
		t.Fatalf("driver ReadHeader: ok=%v length=%d of %d", ok, length, len(wm))
	}
	if op != wiremessage.OpCompressed {
		return reqID, respTo, op, rem
	}
	op, rem, ok = wiremessage.ReadCompressedOriginalOpCode(rem)
	size, rem, ok2 := wiremessage.ReadCompressedUncompressedSize(rem)
	comp, rem, ok3 := wiremessage.ReadCompressedCompressorID(rem)
	if !ok || !ok2 || !ok3 {
		t.Fatal("driver could not read the OP_COMPRESSED fields")
	}
	body, err := driver.DecompressPayload(rem, driver.CompressionOpts{Compressor: comp, UncompressedSize: size})
	if err != nil {
		t.Fatalf("driver DecompressPayload: %v", err)
	}
	if len(body) != int(size) {
		t.Fatalf("decompressed %d bytes, declared %d", len(body), size)
	}
	return reqID, respTo, op, body
}

func TestDriverReadsWrite(t *testing.T) {
	for _, comp := range allCompressors {
		t.Run("msg/"+comp.String(), func(t *testing.T) {
			msg := &Msg{Flags: FlagChecksumPresent, Body: insertMsg(t, 4).Body, Sequences: insertMsg(t, 4).Sequences}
			reqID, respTo, op, rem := parseWithDriver(t, encode(t, 11, 12, msg, comp))
			if reqID != 11 || respTo != 12 || op != wiremessage.OpMsg {
				t.Fatalf("header = %d %d %v", reqID, respTo, op)
			}
			// The driver checks no checksum, so verify it against the
			// rebuilt uncompressed message.
			full := append(wiremessage.AppendHeader(nil, int32(headerLen+len(rem)), reqID, respTo, op), rem...)
			end := len(full) - 4
			if crc32c(full[:end]) != le.Uint32(full[end:]) {
				t.Error("checksum does not verify")
			}
			flags, rem, ok := wiremessage.ReadMsgFlags(rem)
			if !ok || uint32(flags) != msg.Flags {
				t.Fatalf("flags = %v", flags)
			}
			rem = rem[:len(rem)-4]
			stype, rem, _ := wiremessage.ReadMsgSectionType(rem)
			body, rem, ok := wiremessage.ReadMsgSectionSingleDocument(rem)
			if stype != wiremessage.SingleDocument || !ok || !bytes.Equal(body, msg.Body) {
				t.Fatalf("body section: type %v ok %v", stype, ok)
			}
			stype, rem, _ = wiremessage.ReadMsgSectionType(rem)
			id, docs, rem, ok := wiremessage.ReadMsgSectionDocumentSequence(rem)
			if stype != wiremessage.DocumentSequence || !ok || id != "documents" || !reflect.DeepEqual(docs, msg.Sequences[0].Documents) {
				t.Fatalf("sequence section: type %v ok %v id %q docs %d", stype, ok, id, len(docs))
			}
			if len(rem) != 0 {
				t.Fatalf("%d bytes left after the sections", len(rem))
			}
		})
		t.Run("reply/"+comp.String(), func(t *testing.T) {
			reply := sampleMessages(t)["reply many"].(*Reply)
			reqID, respTo, op, rem := parseWithDriver(t, encode(t, 5, 3, reply, comp))
			if reqID != 5 || respTo != 3 || op != wiremessage.OpReply {
				t.Fatalf("header = %d %d %v", reqID, respTo, op)
			}
			flags, rem, _ := wiremessage.ReadReplyFlags(rem)
			cursor, rem, _ := wiremessage.ReadReplyCursorID(rem)
			from, rem, _ := wiremessage.ReadReplyStartingFrom(rem)
			n, rem, _ := wiremessage.ReadReplyNumberReturned(rem)
			docs, rem, _ := wiremessage.ReadReplyDocuments(rem)
			if int32(flags) != reply.ResponseFlags || cursor != reply.CursorID || from != reply.StartingFrom ||
				int(n) != len(reply.Documents) || !reflect.DeepEqual(docs, reply.Documents) || len(rem) != 0 {
				t.Fatalf("driver read flags %v cursor %d from %d n %d docs %d rem %d", flags, cursor, from, n, len(docs), len(rem))
			}
		})
		t.Run("query/"+comp.String(), func(t *testing.T) {
			q := sampleMessages(t)["query selector"].(*Query)
			_, _, op, rem := parseWithDriver(t, encode(t, 1, 0, q, comp))
			flags, rem, _ := wiremessage.ReadQueryFlags(rem)
			ns, rem, _ := wiremessage.ReadQueryFullCollectionName(rem)
			skip, rem, _ := wiremessage.ReadQueryNumberToSkip(rem)
			ret, rem, _ := wiremessage.ReadQueryNumberToReturn(rem)
			query, rem, _ := wiremessage.ReadQueryQuery(rem)
			sel, rem, ok := wiremessage.ReadQueryReturnFieldsSelector(rem)
			if op != wiremessage.OpQuery || int32(flags) != q.Flags || ns != q.FullCollectionName || skip != q.NumberToSkip ||
				ret != q.NumberToReturn || !bytes.Equal(query, q.Query) || !ok || !bytes.Equal(sel, q.ReturnFieldsSelector) || len(rem) != 0 {
				t.Fatalf("driver read %v %v %q %d %d", op, flags, ns, skip, ret)
			}
		})
	}
}

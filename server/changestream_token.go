package server

import (
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Resume tokens (docs/design/change-streams.md): {_data: <hex string>},
// opaque to clients. The bytes are a version byte 0x82 (as mongod's
// tokens start), the event's cluster time (8 bytes, big-endian), the
// change-log sequence number of its entry (8), the event's index in the
// entry (4) and its kind (1); a fragment of an event that
// $changeStreamSplitLargeEvent split adds its index (4), from 0.
type resumeToken struct {
	at   clusterTime
	seq  uint64
	idx  uint32
	kind byte
	// split: the token is a fragment's, the fragment-th of its event.
	split    bool
	fragment uint32
}

// Token kinds.
const (
	tokenEvent      byte = 0 // an event: resume after it
	tokenHighWater  byte = 1 // a position: resume at seq, from its first event
	tokenInvalidate byte = 2 // the invalidate that the event at seq, idx caused
)

const tokenVersion = 0x82

func (t resumeToken) doc() bsoncore.Document {
	b := make([]byte, 22, 26)
	b[0] = tokenVersion
	binary.BigEndian.PutUint32(b[1:], t.at.t)
	binary.BigEndian.PutUint32(b[5:], t.at.i)
	binary.BigEndian.PutUint64(b[9:], t.seq)
	binary.BigEndian.PutUint32(b[17:], t.idx)
	b[21] = t.kind
	if t.split {
		b = binary.BigEndian.AppendUint32(b, t.fragment)
	}
	return bsoncore.NewDocumentBuilder().AppendString("_data", strings.ToUpper(hex.EncodeToString(b))).Build()
}

// parseResumeToken reads a token a client gave back (field names the
// option, for the error).
func parseResumeToken(field string, v bsoncore.Value) (resumeToken, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return resumeToken{}, typeMismatch("$changeStream", field, v, "object")
	}
	data, ok := d.Lookup("_data").StringValueOK()
	if !ok {
		return resumeToken{}, mongoerr.New(mongoerr.Location40647, "Bad resume token: _data of missing or of wrong type. Expected string, got %s", value.Format(v))
	}
	b, err := hex.DecodeString(data)
	switch {
	case err != nil:
		return resumeToken{}, mongoerr.New(mongoerr.FailedToParse, "resume token string was not a valid hex string")
	case len(b) == 0:
		return resumeToken{}, mongoerr.New(mongoerr.Location40649, "invalid empty resume token")
	case len(b) < 22 || b[0] != tokenVersion || b[21] > tokenInvalidate || !(len(b) == 22 || len(b) == 26 && b[21] == tokenEvent):
		return resumeToken{}, mongoerr.New(mongoerr.Location50795, "Invalid Resume Token: not a resume token of this server: %s", value.Format(v))
	}
	t := resumeToken{
		at:   clusterTime{t: binary.BigEndian.Uint32(b[1:]), i: binary.BigEndian.Uint32(b[5:])},
		seq:  binary.BigEndian.Uint64(b[9:]),
		idx:  binary.BigEndian.Uint32(b[17:]),
		kind: b[21],
	}
	if len(b) == 26 {
		t.split, t.fragment = true, binary.BigEndian.Uint32(b[22:])
	}
	return t, nil
}

func stampTime(at uint64) clusterTime { return clusterTime{t: uint32(at >> 32), i: uint32(at)} }

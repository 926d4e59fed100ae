package index

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

func geoDoc(t *testing.T, js string) bsoncore.Document {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(js), false, &d); err != nil {
		t.Fatal(err)
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGeoSpecs(t *testing.T) {
	for _, c := range []struct{ spec, err string }{
		{`{"key": {"loc": "2dsphere"}}`, ""},
		{`{"key": {"loc": "2dsphere", "a": 1}, "2dsphereIndexVersion": 2}`, ""},
		{`{"key": {"loc": "2d"}, "bits": 20, "min": -500, "max": 500}`, ""},
		{`{"key": {"loc": "2d", "a": 1}}`, ""},
		{`{"key": {"a": 1, "loc": "2d"}}`, "2d has to be first in index"},
		{`{"key": {"loc": "2dsphere"}, "bits": 3}`, "valid only for 2d indexes"},
		{`{"key": {"loc": "2d"}, "bits": 40}`, "bits in geo index"},
		{`{"key": {"loc": "2d"}, "min": 5, "max": 5}`, "positive area"},
		{`{"key": {"loc": "2dsphere"}, "2dsphereIndexVersion": 1}`, "NotImplemented"},
		{`{"key": {"loc": "2dsphere"}, "2dsphereIndexVersion": 9}`, "unsupported geo index version"},
		{`{"key": {"loc": "geoHaystack", "a": 1}, "bucketSize": 1}`, "GeoHaystack"},
		{`{"key": {"loc": "2dsphere", "h": "hashed"}}`, "more than one index plugin"},
		{`{"key": {"a": 1}, "bits": 3}`, "valid only for 2d indexes"},
	} {
		s, err := ParseSpec(geoDoc(t, c.spec), nil)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.spec, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error()+mongoerr.As(err).Code.Name(), c.err)):
			t.Errorf("%s: got %v, want %q", c.spec, err, c.err)
		case c.err == "" && strings.Contains(c.spec, `"loc": "2dsphere"}}`) && !strings.Contains(s.Raw.String(), `"2dsphereIndexVersion"`):
			t.Errorf("%s: listed as %s, want 2dsphereIndexVersion", c.spec, s.Raw)
		}
	}
}

func TestGeoKeys(t *testing.T) {
	s, err := ParseSpec(geoDoc(t, `{"key": {"loc": "2dsphere", "a": 1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, _, err := s.Keys(geoDoc(t, `{"_id": 1, "loc": {"type": "Point", "coordinates": [1, 2]}, "a": 1}`))
	if err != nil || len(keys) != 1 {
		t.Fatalf("point: %d keys, %v", len(keys), err)
	}
	keys, multi, err := s.Keys(geoDoc(t, `{"_id": 1, "loc": {"type": "Polygon", "coordinates": [[[0, 0], [3, 0], [3, 3], [0, 0]]]}}`))
	if err != nil || len(keys) < 2 || !multi {
		t.Fatalf("polygon: %d keys, multikey %v, %v", len(keys), multi, err)
	}
	keys, _, err = s.Keys(geoDoc(t, `{"_id": 1, "loc": {"type": "LineString", "coordinates": [[0, 0], [5, 5]]}, "a": [1, 2]}`))
	if err != nil || len(keys) < 4 {
		t.Fatalf("a line beside an array: %d keys, %v", len(keys), err)
	}
	if keys, _, err := s.Keys(geoDoc(t, `{"_id": 1, "a": 1}`)); err != nil || keys != nil {
		t.Fatalf("no geometry: %d keys, %v", len(keys), err)
	}
	_, _, err = s.Keys(geoDoc(t, `{"_id": 1, "loc": {"type": "Point", "coordinates": []}}`))
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.Location16755 || !strings.Contains(me.Msg, "Can't extract geo keys") || !strings.Contains(me.Msg, "Point must only contain numeric elements") {
		t.Fatalf("bad point: %v", err)
	}
	flat, err := ParseSpec(geoDoc(t, `{"key": {"loc": "2d"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := flat.Keys(geoDoc(t, `{"_id": 1, "loc": [200, 0]}`)); mongoerr.As(err).Code != mongoerr.Location13027 {
		t.Fatalf("2d out of range: %v", err)
	}
	if keys, _, err := flat.Keys(geoDoc(t, `{"_id": 1, "loc": {"x": 10, "y": 20}}`)); err != nil || len(keys) != 1 {
		t.Fatalf("2d pair: %d keys, %v", len(keys), err)
	}
}

func TestDecodeCell(t *testing.T) {
	for _, id := range []uint64{1, 1 << 62, 1<<63 + 12345, 0x8f2c3a5b6d7e9f01, ^uint64(0) - 2} {
		key := EncodeKey(nil, FlipCell(id))
		got, ok := DecodeCell(append(key, 0x05, 0x07))
		if !ok || got != id {
			t.Errorf("%x: decoded %x, %v", id, got, ok)
		}
	}
}

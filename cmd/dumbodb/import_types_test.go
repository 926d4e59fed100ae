package main

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestColumnTypes: each of mongoimport's column types reads its value,
// and a format or encoding it cannot use is refused before any row.
func TestColumnTypes(t *testing.T) {
	when := bson.NewDateTimeFromTime(time.Date(2026, 3, 4, 17, 6, 7, 0, time.UTC))
	for _, tc := range []struct {
		column, value string
		want          any
	}{
		{"b.binary(hex)", "cafe", bson.Binary{Data: []byte{0xca, 0xfe}}},
		{"b.binary(base64)", "yv4=", bson.Binary{Data: []byte{0xca, 0xfe}}},
		{"b.binary(base32)", "ZL7A====", bson.Binary{Data: []byte{0xca, 0xfe}}},
		{"d.date(2006-01-02 15:04:05)", "2026-03-04 17:06:07", when},
		{"d.date_ms(yyyy-MM-dd HH:mm:ss)", "2026-03-04 17:06:07", when},
		{"d.date_ms(dd/MM/yyyy hh:mm:ss tt)", "04/03/2026 05:06:07 PM", when},
		{"d.date_oracle(YYYY-MM-DD HH24:MI:SS)", "2026-03-04 17:06:07", when},
		{"d.date_oracle(dd-mon-yyyy hh24.mi.ss)", "04-Mar-2026 17.06.07", when},
		{"n.decimal()", "1.10", bson.Decimal128{}},
	} {
		c, err := parseColumn(tc.column, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.column, err)
		}
		got, err := typedValue(c, tc.value)
		if err != nil {
			t.Errorf("%s %q: %v", tc.column, tc.value, err)
			continue
		}
		if d, ok := got.(bson.Decimal128); ok {
			if d.String() != "1.10" {
				t.Errorf("%s: %v", tc.column, d)
			}
			continue
		}
		if b, ok := got.(bson.Binary); ok {
			if string(b.Data) != string(tc.want.(bson.Binary).Data) {
				t.Errorf("%s: %x", tc.column, b.Data)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.column, tc.value, got, tc.want)
		}
	}
	for _, bad := range []string{"b.binary(base58)", "d.date_ms(yyyy-QQ)", "d.date_oracle(YYYY-WW)", "x.uuid()"} {
		if _, err := parseColumn(bad, true); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
}

package main

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The column types of --columnsHaveTypes beyond the plain ones, as
// mongoimport spells them: binary(<encoding>), date(<layout>) (Go's, as
// date_go), date_ms(<format>) (Microsoft SQL Server's FORMAT),
// date_oracle(<format>) (Oracle's TO_DATE) and decimal().

// columnKinds are the types a column may have.
var columnKinds = map[string]bool{
	"auto": true, "string": true, "int32": true, "int64": true, "double": true, "boolean": true,
	"date": true, "date_go": true, "date_ms": true, "date_oracle": true, "binary": true, "decimal": true,
}

// checkColumnArg refuses a type's argument that cannot be used, before
// any row is read; date_ms and date_oracle formats become Go layouts.
func checkColumnArg(c *column) error {
	var err error
	switch c.kind {
	case "binary":
		if c.arg != "base32" && c.arg != "base64" && c.arg != "hex" {
			err = fmt.Errorf("binary(%s): the encoding must be base32, base64 or hex", c.arg)
		}
	case "date_ms":
		c.arg, err = goLayout(c.arg, msTokens)
	case "date_oracle":
		c.arg, err = goLayout(strings.ToUpper(c.arg), oracleTokens)
	}
	return err
}

// extraTypedValue reads a value of one of the types above.
func extraTypedValue(c column, s string) (any, bool, error) {
	switch c.kind {
	case "binary":
		var data []byte
		var err error
		switch c.arg {
		case "base32":
			data, err = base32.StdEncoding.DecodeString(s)
		case "base64":
			data, err = base64.StdEncoding.DecodeString(s)
		default:
			data, err = hex.DecodeString(s)
		}
		return bson.Binary{Data: data}, true, err
	case "date", "date_go", "date_ms", "date_oracle":
		t, err := time.Parse(c.arg, s)
		return bson.NewDateTimeFromTime(t), true, err
	case "decimal":
		d, err := bson.ParseDecimal128(strings.TrimSpace(s))
		return d, true, err
	}
	return nil, false, nil
}

// layoutToken is a format's token and the Go layout it stands for.
type layoutToken struct{ token, layout string }

// msTokens are SQL Server's FORMAT tokens, longest first.
var msTokens = []layoutToken{
	{"yyyy", "2006"}, {"yy", "06"},
	{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"}, {"M", "1"},
	{"dddd", "Monday"}, {"ddd", "Mon"}, {"dd", "02"}, {"d", "2"},
	{"HH", "15"}, {"hh", "03"}, {"h", "3"},
	{"mm", "04"}, {"m", "4"}, {"ss", "05"}, {"s", "5"},
	{"fffffff", "0000000"}, {"ffffff", "000000"}, {"fffff", "00000"}, {"ffff", "0000"}, {"fff", "000"}, {"ff", "00"}, {"f", "0"},
	{"tt", "PM"}, {"zzz", "-07:00"}, {"zz", "-07"},
}

// oracleTokens are Oracle's TO_DATE tokens (the format upper-cased),
// longest first.
var oracleTokens = []layoutToken{
	{"YYYY", "2006"}, {"YY", "06"},
	{"MONTH", "January"}, {"MON", "Jan"}, {"MM", "01"},
	{"DAY", "Monday"}, {"DY", "Mon"}, {"DD", "02"},
	{"HH24", "15"}, {"HH12", "03"}, {"HH", "03"},
	{"MI", "04"}, {"SS", "05"},
	{"FF6", "000000"}, {"FF3", "000"}, {"FF", "000000"},
	{"AM", "PM"}, {"PM", "PM"}, {"TZH:TZM", "-07:00"},
}

// goLayout translates a format of tokens into a Go layout; any other
// letter is refused, punctuation and digits are kept.
func goLayout(format string, tokens []layoutToken) (string, error) {
	var out strings.Builder
	for rest := format; rest != ""; {
		matched := false
		for _, t := range tokens {
			if strings.HasPrefix(rest, t.token) {
				out.WriteString(t.layout)
				rest = rest[len(t.token):]
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		if c := rest[0]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return "", fmt.Errorf("date format %q: %q is no token this format knows", format, rest)
		}
		out.WriteByte(rest[0])
		rest = rest[1:]
	}
	return out.String(), nil
}

package query

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Date expressions. Dates are UTC milliseconds; a timezone (an Olson name
// or a "+hh:mm" offset) selects the calendar the parts are read in.

var locations sync.Map // name -> *time.Location

// parseTimezone resolves a timezone argument; missing or null is UTC.
func parseTimezone(v bsoncore.Value) (*time.Location, error) {
	if nullish(v) {
		return time.UTC, nil
	}
	if v.Type != bsoncore.TypeString {
		return nil, mongoerr.New(mongoerr.Location40517, "timezone must evaluate to a string, found %s", value.TypeName(v.Type))
	}
	name := v.StringValue()
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
	}
	loc, err := offsetZone(name)
	if err != nil {
		if loc, err = time.LoadLocation(name); err != nil || name == "" || name == "Local" {
			return nil, mongoerr.New(mongoerr.Location40485, "unrecognized time zone identifier: \"%s\"", name)
		}
	}
	locations.Store(name, loc)
	return loc, nil
}

// offsetZone parses "+hh", "+hhmm" or "+hh:mm" (and '-').
func offsetZone(s string) (*time.Location, error) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return nil, fmt.Errorf("not an offset")
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	if len(digits) != 2 && len(digits) != 4 {
		return nil, fmt.Errorf("not an offset")
	}
	h, err1 := strconv.Atoi(digits[:2])
	m := 0
	var err2 error
	if len(digits) == 4 {
		m, err2 = strconv.Atoi(digits[2:])
	}
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("not an offset")
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return time.FixedZone(s, off), nil
}

// dateValue reads a date, timestamp or ObjectId as a time.
func dateValue(name string, v bsoncore.Value) (time.Time, error) {
	switch v.Type {
	case bsoncore.TypeDateTime:
		return time.UnixMilli(v.DateTime()).UTC(), nil
	case bsoncore.TypeTimestamp:
		t, _ := v.Timestamp()
		return time.Unix(int64(t), 0).UTC(), nil
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		return time.Unix(int64(uint32(oid[0])<<24|uint32(oid[1])<<16|uint32(oid[2])<<8|uint32(oid[3])), 0).UTC(), nil
	}
	return time.Time{}, mongoerr.New(mongoerr.Location16006, "can't convert from BSON type %s to Date", exprTypeName(v))
}

func timeValue(t time.Time) bsoncore.Value { return value.Date(t.UnixMilli()) }

// datePart is $year, $month, ...: part reads one calendar part of a date.
func datePart(name string, part func(t time.Time) int) exprEntry {
	return special(name, compileDatePart(part))
}

// The calendar parts that time.Time has no method for.
func monthOf(t time.Time) int        { return int(t.Month()) }
func millisecondOf(t time.Time) int  { return t.Nanosecond() / 1e6 }
func dayOfWeekOf(t time.Time) int    { return int(t.Weekday()) + 1 }
func weekOf(t time.Time) int         { return (t.YearDay() + 6 - int(t.Weekday())) / 7 }
func isoWeekOf(t time.Time) int      { _, w := t.ISOWeek(); return w }
func isoWeekYearOf(t time.Time) int  { y, _ := t.ISOWeek(); return y }
func isoDayOfWeekOf(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 }

type datePartExpr struct {
	part     func(time.Time) int
	name     string
	date, tz Expr
}

// compileDatePart accepts <date>, [<date>] or {date, timezone}.
func compileDatePart(part func(time.Time) int) func(string, bsoncore.Value, *compileScope) (Expr, error) {
	return func(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
		e := &datePartExpr{part: part, name: name}
		if arg.Type == bsoncore.TypeArray {
			if value.ArrayLen(arg.Data) != 1 {
				return nil, mongoerr.New(mongoerr.Location40536, "%s accepts exactly one argument", name)
			}
			arg, _ = value.ArrayElem(arg.Data, 0)
		}
		var err error
		if arg.Type == bsoncore.TypeEmbeddedDocument && !value.IsOperatorDoc(arg) {
			d, _ := value.LookupField(arg.Data, "date")
			if d.Type == 0 {
				return nil, mongoerr.New(mongoerr.Location40539, "missing 'date' argument to %s, provided: %s", name, value.Format(arg))
			}
			if e.date, err = compileExpr(d, s); err != nil {
				return nil, err
			}
			if tz, ok := value.LookupField(arg.Data, "timezone"); ok {
				e.tz, err = compileExpr(tz, s)
			}
			return e, err
		}
		e.date, err = compileExpr(arg, s)
		return e, err
	}
}

func (e *datePartExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	v, err := e.date.eval(c)
	if err != nil || nullish(v) {
		return value.Null, err
	}
	loc := time.UTC
	if e.tz != nil {
		tz, err := e.tz.eval(c)
		if err != nil {
			return tz, err
		}
		if nullish(tz) {
			return value.Null, nil
		}
		if loc, err = parseTimezone(tz); err != nil {
			return bsoncore.Value{}, err
		}
	}
	t, err := dateValue(e.name, v)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return value.Int32(int32(e.part(t.In(loc)))), nil
}

const defaultDateFormat = "%Y-%m-%dT%H:%M:%S.%LZ"

func evalDateToString(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	d := a["date"]
	if nullish(d) {
		if on, ok := a["onNull"]; ok {
			return on, nil
		}
		return value.Null, nil
	}
	if tz, ok := a["timezone"]; ok && nullish(tz) {
		return value.Null, nil
	}
	loc, err := parseTimezone(a["timezone"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	format := defaultDateFormat
	if f, ok := a["format"]; ok {
		if nullish(f) {
			return value.Null, nil
		}
		if f.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location18533, "$dateToString requires that 'format' be a string, found: %s", value.TypeName(f.Type))
		}
		format = f.StringValue()
	}
	t, err := dateValue("$dateToString", d)
	if err != nil {
		return bsoncore.Value{}, err
	}
	s, err := formatDate(format, t.In(loc))
	if err != nil {
		return bsoncore.Value{}, err
	}
	return value.String(s), nil
}

// formatDate implements $dateToString's % specifiers.
func formatDate(format string, t time.Time) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 >= len(format) {
			return "", mongoerr.New(mongoerr.Location18535, "Unmatched '%%' at end of format string")
		}
		i++
		isoYear, isoWeek := t.ISOWeek()
		_, offset := t.Zone()
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'L':
			fmt.Fprintf(&b, "%03d", t.Nanosecond()/1e6)
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday())+1)
		case 'u':
			fmt.Fprintf(&b, "%d", (int(t.Weekday())+6)%7+1)
		case 'U':
			fmt.Fprintf(&b, "%02d", weekOf(t))
		case 'V':
			fmt.Fprintf(&b, "%02d", isoWeek)
		case 'G':
			fmt.Fprintf(&b, "%04d", isoYear)
		case 'z':
			sign := '+'
			if offset < 0 {
				sign, offset = '-', -offset
			}
			fmt.Fprintf(&b, "%c%02d%02d", sign, offset/3600, offset%3600/60)
		case 'Z':
			fmt.Fprintf(&b, "%d", offset/60)
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case '%':
			b.WriteByte('%')
		default:
			return "", mongoerr.New(mongoerr.Location18536, "Invalid format character '%%%c' in format string", format[i])
		}
	}
	return b.String(), nil
}

func evalDateFromString(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	s := a["dateString"]
	if nullish(s) {
		if on, ok := a["onNull"]; ok {
			return on, nil
		}
		return value.Null, nil
	}
	r, err := dateFromString(s, a)
	if err != nil {
		if on, ok := a["onError"]; ok {
			return on, nil
		}
		return bsoncore.Value{}, err
	}
	return r, nil
}

func dateFromString(s bsoncore.Value, a namedArgs) (bsoncore.Value, error) {
	if s.Type != bsoncore.TypeString {
		return bsoncore.Value{}, mongoerr.New(conversionFailure, "$dateFromString requires that 'dateString' be a string, found: %s with value %s", value.TypeName(s.Type), value.Format(s))
	}
	loc, err := parseTimezone(a["timezone"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	if f, ok := a["format"]; ok && !nullish(f) {
		if f.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40684, "$dateFromString requires that 'format' be a string, found: %s", value.TypeName(f.Type))
		}
		t, err := parseWithFormat(s.StringValue(), f.StringValue(), loc)
		if err != nil {
			return bsoncore.Value{}, err
		}
		return timeValue(t), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02", "2006/01/02 15:04:05", "2006/01/02",
		"Jan 2, 2006", "January 2, 2006", "2 Jan 2006", "Mon, 02 Jan 2006 15:04:05 MST"} {
		if t, err := time.ParseInLocation(layout, s.StringValue(), loc); err == nil {
			return timeValue(t), nil
		}
	}
	return bsoncore.Value{}, mongoerr.New(conversionFailure, "Error parsing date string '%s'", s.StringValue())
}

// parseWithFormat reads a string by $dateFromString's % specifiers.
func parseWithFormat(s, format string, loc *time.Location) (time.Time, error) {
	year, month, day, hour, minute, sec, ms := 1970, 1, 1, 0, 0, 0, 0
	offset, hasOffset := 0, false
	fail := func() (time.Time, error) {
		return time.Time{}, mongoerr.New(conversionFailure, "Error parsing date string '%s' with format '%s'", s, format)
	}
	num := func(width int) (int, bool) {
		j := 0
		for j < width && j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			return 0, false
		}
		n, _ := strconv.Atoi(s[:j])
		s = s[j:]
		return n, true
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			if len(s) == 0 || s[0] != format[i] {
				return fail()
			}
			s = s[1:]
			continue
		}
		i++
		ok := true
		switch format[i] {
		case 'Y':
			year, ok = num(4)
		case 'm':
			month, ok = num(2)
		case 'd':
			day, ok = num(2)
		case 'H':
			hour, ok = num(2)
		case 'M':
			minute, ok = num(2)
		case 'S':
			sec, ok = num(2)
		case 'L':
			ms, ok = num(3)
		case 'z', 'Z':
			if len(s) > 0 && (s[0] == 'Z') {
				s, hasOffset = s[1:], true
				continue
			}
			if len(s) < 5 {
				return fail()
			}
			l, err := offsetZone(s[:5])
			if err != nil {
				return fail()
			}
			_, offset = time.Date(2000, 1, 1, 0, 0, 0, 0, l).Zone()
			s, hasOffset = s[5:], true
		case '%':
			if len(s) == 0 || s[0] != '%' {
				return fail()
			}
			s = s[1:]
		default:
			return time.Time{}, mongoerr.New(mongoerr.Location18536, "Invalid format character '%%%c' in format string", format[i])
		}
		if !ok {
			return fail()
		}
	}
	if len(s) > 0 {
		return fail()
	}
	if hasOffset {
		loc = time.FixedZone("", offset)
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, loc), nil
}

// unitArg validates a time unit argument.
func unitArg(name string, v bsoncore.Value) (string, error) {
	if v.Type != bsoncore.TypeString || timeUnitMillis(v.StringValue()) == 0 {
		return "", mongoerr.New(mongoerr.Location5439014, "%s requires 'unit' to be a valid time unit, found %s", name, value.Format(v))
	}
	return v.StringValue(), nil
}

// addCalendar adds n units to t in t's location: days and longer follow
// the calendar (so a day across a DST change is 23 or 25 hours).
func addCalendar(t time.Time, n int64, unit string) time.Time {
	switch unit {
	case "year":
		return t.AddDate(int(n), 0, 0)
	case "quarter":
		return t.AddDate(0, 3*int(n), 0)
	case "month":
		return t.AddDate(0, int(n), 0)
	case "week":
		return t.AddDate(0, 0, 7*int(n))
	case "day":
		return t.AddDate(0, 0, int(n))
	}
	return t.Add(time.Duration(n * timeUnitMillis(unit) * int64(time.Millisecond)))
}

func dateAddFunc(sign int64) func(*evalCtx, namedArgs) (bsoncore.Value, error) {
	return func(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
		if nullish(a["startDate"]) || nullish(a["unit"]) || nullish(a["amount"]) {
			return value.Null, nil
		}
		t, err := dateValue("$dateAdd", a["startDate"])
		if err != nil {
			return bsoncore.Value{}, err
		}
		unit, err := unitArg("$dateAdd", a["unit"])
		if err != nil {
			return bsoncore.Value{}, err
		}
		amt := a["amount"]
		if !value.IsNumber(amt) || value.ToFloat(amt) != math.Trunc(value.ToFloat(amt)) {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location5166403, "$dateAdd expects integer amount of time units, found %s", value.Format(amt))
		}
		loc, err := parseTimezone(a["timezone"])
		if err != nil {
			return bsoncore.Value{}, err
		}
		return timeValue(addCalendar(t.In(loc), sign*int64(value.ToFloat(amt)), unit)), nil
	}
}

// weekdayArg reads startOfWeek (default Sunday).
func weekdayArg(v bsoncore.Value) (time.Weekday, error) {
	if nullish(v) {
		return time.Sunday, nil
	}
	if v.Type == bsoncore.TypeString {
		s := strings.ToLower(v.StringValue())
		for d := time.Sunday; d <= time.Saturday; d++ {
			name := strings.ToLower(d.String())
			if s == name || s == name[:3] {
				return d, nil
			}
		}
	}
	return 0, mongoerr.New(mongoerr.Location5439015, "startOfWeek must be a valid day of the week, found %s", value.Format(v))
}

// truncate cuts t (in its location) down to its unit's boundary; binSize
// counts units from 2000-01-01 (weeks from the first startOfWeek on or
// after it).
func truncate(t time.Time, unit string, bin int64, sow time.Weekday) time.Time {
	loc := t.Location()
	ref := time.Date(2000, 1, 1, 0, 0, 0, 0, loc)
	switch unit {
	case "year", "quarter", "month":
		months := int64(t.Year()-2000)*12 + int64(t.Month()-1)
		per := bin
		if unit == "quarter" {
			per *= 3
		} else if unit == "year" {
			per *= 12
		}
		months = value.FloorDiv(months, per) * per
		return time.Date(2000, time.Month(1+months), 1, 0, 0, 0, 0, loc)
	case "week", "day":
		days := int64(bin)
		if unit == "week" {
			days *= 7
			ref = ref.AddDate(0, 0, (int(sow)-int(ref.Weekday())+7)%7)
		}
		d := daysBetween(ref, t)
		return ref.AddDate(0, 0, int(value.FloorDiv(d, days)*days))
	}
	step := bin * timeUnitMillis(unit)
	ms := t.UnixMilli() - ref.UnixMilli()
	return time.UnixMilli(ref.UnixMilli() + value.FloorDiv(ms, step)*step).In(loc)
}

// daysBetween counts calendar days from a to b in their location.
func daysBetween(a, b time.Time) int64 {
	da := time.Date(a.Year(), a.Month(), a.Day(), 0, 0, 0, 0, time.UTC)
	db := time.Date(b.Year(), b.Month(), b.Day(), 0, 0, 0, 0, time.UTC)
	return int64(db.Sub(da).Hours() / 24)
}

func evalDateTrunc(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	if nullish(a["date"]) || nullish(a["unit"]) {
		return value.Null, nil
	}
	t, err := dateValue("$dateTrunc", a["date"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	unit, err := unitArg("$dateTrunc", a["unit"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	bin := int64(1)
	if b, ok := a["binSize"]; ok {
		if !value.IsNumber(b) || value.ToFloat(b) < 1 || value.ToFloat(b) != math.Trunc(value.ToFloat(b)) {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location5439017, "$dateTrunc requires 'binSize' to be a positive 64-bit integer, found %s", value.Format(b))
		}
		bin = int64(value.ToFloat(b))
	}
	loc, err := parseTimezone(a["timezone"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	sow, err := weekdayArg(a["startOfWeek"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	return timeValue(truncate(t.In(loc), unit, bin, sow)), nil
}

func evalDateDiff(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	if nullish(a["startDate"]) || nullish(a["endDate"]) || nullish(a["unit"]) {
		return value.Null, nil
	}
	t1, err := dateValue("$dateDiff", a["startDate"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	t2, err := dateValue("$dateDiff", a["endDate"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	unit, err := unitArg("$dateDiff", a["unit"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	loc, err := parseTimezone(a["timezone"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	sow, err := weekdayArg(a["startOfWeek"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	t1, t2 = t1.In(loc), t2.In(loc)
	var n int64
	switch unit {
	case "year":
		n = int64(t2.Year() - t1.Year())
	case "quarter":
		n = int64((t2.Year()*12+int(t2.Month())-1)/3 - (t1.Year()*12+int(t1.Month())-1)/3)
	case "month":
		n = int64((t2.Year()-t1.Year())*12 + int(t2.Month()) - int(t1.Month()))
	case "week":
		n = daysBetween(truncate(t1, "week", 1, sow), truncate(t2, "week", 1, sow)) / 7
	case "day":
		n = daysBetween(t1, t2)
	default:
		u := timeUnitMillis(unit)
		n = value.FloorDiv(t2.UnixMilli(), u) - value.FloorDiv(t1.UnixMilli(), u)
		if unit == "hour" || unit == "minute" {
			// Boundaries are local: shift by the zone offsets.
			_, o1 := t1.Zone()
			_, o2 := t2.Zone()
			n = value.FloorDiv(t2.UnixMilli()+int64(o2)*1000, u) - value.FloorDiv(t1.UnixMilli()+int64(o1)*1000, u)
		}
	}
	return value.Int64(n), nil
}

func evalDateToParts(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	if nullish(a["date"]) {
		return value.Null, nil
	}
	t, err := dateValue("$dateToParts", a["date"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	loc, err := parseTimezone(a["timezone"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	t = t.In(loc)
	b := bsoncore.NewDocumentBuilder()
	if iso, ok := a["iso8601"]; ok && exprTruthy(iso) {
		y, w := t.ISOWeek()
		b.AppendInt32("isoWeekYear", int32(y)).AppendInt32("isoWeek", int32(w)).AppendInt32("isoDayOfWeek", int32((int(t.Weekday())+6)%7+1))
	} else {
		b.AppendInt32("year", int32(t.Year())).AppendInt32("month", int32(t.Month())).AppendInt32("day", int32(t.Day()))
	}
	d := b.AppendInt32("hour", int32(t.Hour())).AppendInt32("minute", int32(t.Minute())).
		AppendInt32("second", int32(t.Second())).AppendInt32("millisecond", int32(t.Nanosecond()/1e6)).Build()
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, nil
}

func evalDateFromParts(_ *evalCtx, a namedArgs) (bsoncore.Value, error) {
	_, iso := a["isoWeekYear"]
	_, cal := a["year"]
	if iso == cal {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present (but not both)")
	}
	part := func(name string, def int64) (int64, bool, error) {
		v, ok := a[name]
		if !ok {
			return def, false, nil
		}
		if nullish(v) {
			return 0, true, nil
		}
		if !value.IsNumber(v) || value.ToFloat(v) != math.Trunc(value.ToFloat(v)) {
			return 0, false, mongoerr.New(mongoerr.Location40515, "'%s' must evaluate to an integer, found %s with value %s", name, value.TypeName(v.Type), value.Format(v))
		}
		return int64(value.ToFloat(v)), false, nil
	}
	names := []string{"year", "month", "day", "hour", "minute", "second", "millisecond"}
	if iso {
		names = []string{"isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second", "millisecond"}
	}
	vals := make([]int64, len(names))
	for i, n := range names {
		def := int64(0)
		if i == 1 || i == 2 {
			def = 1
		}
		v, isNull, err := part(n, def)
		if err != nil {
			return bsoncore.Value{}, err
		}
		if isNull {
			return value.Null, nil
		}
		vals[i] = v
	}
	if tz, ok := a["timezone"]; ok && nullish(tz) {
		return value.Null, nil
	}
	loc, err := parseTimezone(a["timezone"])
	if err != nil {
		return bsoncore.Value{}, err
	}
	var t time.Time
	if iso {
		// ISO week 1 holds January 4th; its Monday starts the year.
		jan4 := time.Date(int(vals[0]), 1, 4, 0, 0, 0, 0, loc)
		monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
		t = monday.AddDate(0, 0, int((vals[1]-1)*7+vals[2]-1))
	} else {
		t = time.Date(int(vals[0]), time.Month(vals[1]), int(vals[2]), 0, 0, 0, 0, loc)
	}
	t = t.Add(time.Duration(vals[3])*time.Hour + time.Duration(vals[4])*time.Minute +
		time.Duration(vals[5])*time.Second + time.Duration(vals[6])*time.Millisecond)
	return timeValue(t), nil
}

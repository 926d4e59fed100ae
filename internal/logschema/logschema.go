// Package logschema owns the one definition of a well-formed DumboDB log
// line: mongod's structured log schema (the MongoDB manual's "Log
// Messages"), against which the tests check every line the servers they
// start write. Log pipelines built for mongod read DumboDB's log, so a
// line they could not read is a bug the tests must catch wherever it is
// written.
//
// A line is one JSON object whose fields come in mongod's order:
//
//	t    {"$date": ISO-8601 with milliseconds and a numeric UTC offset}
//	s    F, E, W, I or D1 to D5
//	c    one of mongod's components ("-" for the default one)
//	id   an integer
//	ctx  a non-empty string
//	svc  (optional) a string
//	msg  a string
//	attr (optional) an object
//	tags (optional) an array of strings
//	truncated, size (optional) objects
//
// Every durationMillis in attr, at any depth, is an integer, and a slow
// query's line ("Slow query", id 51803) carries attr.type, attr.ns as
// db.coll, attr.command as an object (or, past 10 KiB, its name with
// attr.truncated true, as DumboDB documents) and attr.durationMillis.
//
// The package imports nothing of the project's and not testing (TB is the
// part of testing.TB CheckT uses), so that internal/dumboproc, which the
// commands link, can check a process's log.
package logschema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// field is one of the line's top-level fields, in the order mongod writes
// them.
type field struct {
	name     string
	required bool
	check    func(json.RawMessage) error
}

var fields = []field{
	{"t", true, checkTime},
	{"s", true, checkSeverity},
	{"c", true, checkComponent},
	{"id", true, checkInteger},
	{"ctx", true, checkNonEmptyString},
	{"svc", false, checkString},
	{"msg", true, checkString},
	{"attr", false, checkAttr},
	{"tags", false, checkTags},
	{"truncated", false, checkObject},
	{"size", false, checkObject},
}

// severities are mongod's: fatal, error, warning, info and the debug
// levels 1 to 5.
var severities = map[string]bool{"F": true, "E": true, "W": true, "I": true,
	"D1": true, "D2": true, "D3": true, "D4": true, "D5": true}

// components are the names mongod writes in "c" (logv2's LogComponent
// log names), "-" being the default component. Tools filter mongod's log
// by them, so a name of DumboDB's own would hide its lines from them.
var components = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`-
		ACCESS ASIO ASSERT BRIDGE COMMAND CONNPOOL CONTROL ELECTION EXECUTOR
		FTDC GEO HEALTH INDEX INITSYNC JOURNAL MIGRATE MIG_PERF NETWORK QUERY
		RDELETER RECOVERY REPL REPL_HB RESHARD ROLLBACK SHARDING SH_REFR
		STORAGE TENANT_M TEST TRACKING TXN WRITE
		WT WTBACKUP WTCHKPT WTCMPCT WTEVICT WTHS WTRECOV WTRTS WTSLVG WTTIER
		WTTS WTTXN WTVRFY WTWRTLOG`) {
		components[c] = true
	}
}

// slowQueryID is mongod's id of "Slow query".
const slowQueryID = 51803

// dateRe is t's $date: mongod writes milliseconds and a numeric offset
// (+00:00 for UTC, never Z).
var dateRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}$`)

// CheckLine checks one log line (its newline may be left on) and returns
// an error naming the first thing in it that breaks mongod's schema.
func CheckLine(line []byte) error {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if !json.Valid(line) {
		return errors.New("not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	got := map[string]json.RawMessage{}
	next := 0 // the index in fields the next field may have, at least
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return err
		}
		i := fieldIndex(key)
		switch {
		case i < 0:
			return fmt.Errorf("field %q is not one of mongod's", key)
		case got[key] != nil:
			return fmt.Errorf("field %q twice", key)
		case i < next:
			return fmt.Errorf("field %q after %q: mongod's order is t, s, c, id, ctx, svc, msg, attr, tags, truncated, size", key, fields[next-1].name)
		}
		if err := fields[i].check(val); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		got[key], next = val, i+1
	}
	for _, f := range fields {
		if f.required && got[f.name] == nil {
			return fmt.Errorf("no %q field", f.name)
		}
	}
	var msg string
	json.Unmarshal(got["msg"], &msg)
	if msg == "Slow query" {
		return checkSlowQuery(got["id"], got["attr"])
	}
	return nil
}

func fieldIndex(name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

func checkTime(v json.RawMessage) error {
	var t map[string]json.RawMessage
	if json.Unmarshal(v, &t) != nil || len(t) != 1 || t["$date"] == nil {
		return fmt.Errorf("%s is not {\"$date\": ...}", v)
	}
	var date string
	if json.Unmarshal(t["$date"], &date) != nil || !dateRe.MatchString(date) {
		return fmt.Errorf("$date %s is not ISO-8601 with milliseconds and a numeric offset", t["$date"])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000-07:00", date); err != nil {
		return fmt.Errorf("$date %q: %v", date, err)
	}
	return nil
}

func checkSeverity(v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) != nil || !severities[s] {
		return fmt.Errorf("%s is not one of F, E, W, I, D1 to D5", v)
	}
	return nil
}

// IsComponent reports whether name is one of mongod's components, which
// a line's "c" must be.
func IsComponent(name string) bool { return components[name] }

func checkComponent(v json.RawMessage) error {
	var c string
	if json.Unmarshal(v, &c) != nil || !components[c] {
		return fmt.Errorf("%s is not one of mongod's components", v)
	}
	return nil
}

// checkInteger accepts a JSON number written as an integer: mongod writes
// its integers without a fraction or an exponent.
func checkInteger(v json.RawMessage) error {
	if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
		return fmt.Errorf("%s is not an integer", v)
	}
	return nil
}

func checkString(v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return fmt.Errorf("%s is not a string", v)
	}
	return nil
}

func checkNonEmptyString(v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) != nil || s == "" {
		return fmt.Errorf("%s is not a non-empty string", v)
	}
	return nil
}

func checkObject(v json.RawMessage) error {
	if len(v) == 0 || v[0] != '{' {
		return fmt.Errorf("%s is not an object", v)
	}
	return nil
}

func checkTags(v json.RawMessage) error {
	var tags []string
	if json.Unmarshal(v, &tags) != nil || tags == nil {
		return fmt.Errorf("%s is not an array of strings", v)
	}
	return nil
}

// checkAttr checks attr is an object and walks it: an object holding a
// key twice or a durationMillis that is not an integer, at any depth.
func checkAttr(v json.RawMessage) error {
	if err := checkObject(v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	return walk(dec, "attr")
}

// walk reads one value from dec, checking every object in it.
func walk(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key := kt.(string)
			if seen[key] {
				return fmt.Errorf("%s.%s twice", path, key)
			}
			seen[key] = true
			if key == "durationMillis" {
				n, err := dec.Token()
				if num, ok := n.(json.Number); err != nil || !ok || checkInteger(json.RawMessage(num)) != nil {
					return fmt.Errorf("%s.durationMillis is not an integer", path)
				}
				continue
			}
			if err := walk(dec, path+"."+key); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walk(dec, path+"."+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// checkSlowQuery checks what mongod's slow query lines carry and tools
// that summarize them (mtools, Atlas's profiler) read.
func checkSlowQuery(id, attrRaw json.RawMessage) error {
	if string(id) != strconv.Itoa(slowQueryID) {
		return fmt.Errorf("slow query: id %s, not mongod's %d", id, slowQueryID)
	}
	var attr map[string]json.RawMessage
	if attrRaw == nil || json.Unmarshal(attrRaw, &attr) != nil {
		return errors.New("slow query: no attr")
	}
	var typ, ns string
	if json.Unmarshal(attr["type"], &typ) != nil || typ == "" {
		return fmt.Errorf("slow query: attr.type %s is not a non-empty string", orMissing(attr["type"]))
	}
	if json.Unmarshal(attr["ns"], &ns) != nil {
		return fmt.Errorf("slow query: attr.ns %s is not a string", orMissing(attr["ns"]))
	}
	if db, coll, ok := strings.Cut(ns, "."); !ok || db == "" || coll == "" {
		return fmt.Errorf("slow query: attr.ns %q is not db.coll", ns)
	}
	if attr["command"] == nil || checkObject(attr["command"]) != nil {
		return fmt.Errorf("slow query: attr.command %s is not an object", orMissing(attr["command"]))
	}
	if attr["durationMillis"] == nil {
		return errors.New("slow query: no attr.durationMillis")
	}
	return nil
}

func orMissing(v json.RawMessage) string {
	if v == nil {
		return "(missing)"
	}
	return string(v)
}

// maxReported bounds the bad lines an error quotes: one bug in a line
// logged per connection would otherwise quote the whole log.
const maxReported = 20

// Check checks every line r holds and returns an error quoting each bad
// one with its number and what is wrong, or nil when all are good. An
// empty line is bad: mongod never writes one.
func Check(r io.Reader) error {
	br := bufio.NewReader(r) // not a Scanner: a line has no length bound
	var bad []string
	n, total := 0, 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			n++
			if lerr := CheckLine(line); lerr != nil {
				total++
				if len(bad) < maxReported {
					bad = append(bad, fmt.Sprintf("line %d: %v\n  %s", n, lerr, bytes.TrimSuffix(line, []byte("\n"))))
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if total == 0 {
		return nil
	}
	if total > len(bad) {
		bad = append(bad, fmt.Sprintf("and %d more", total-len(bad)))
	}
	return fmt.Errorf("%d of %d log lines break mongod's log schema:\n%s", total, n, strings.Join(bad, "\n"))
}

// CheckFile is Check of the file at path.
func CheckFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := Check(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// TB is the part of testing.TB that CheckT uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CheckT fails t when a line of log, whose origin what names, breaks
// mongod's schema. A test helper calls it when a server it started has
// stopped, so that no test need remember to.
func CheckT(t TB, what, log string) {
	t.Helper()
	if err := Check(strings.NewReader(log)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The input formats of `dumbodb import`, as mongoimport reads them: JSON
// (an array, or one document per line), CSV and TSV.

// record is one input document, or why the input at its place is not one.
type record struct {
	line int // where it starts, from 1
	doc  bson.Raw
	err  error
}

// reader yields the records of an input.
type reader interface {
	next() (record, bool)
}

// newReader reads in, of kind "json", "csv" or "tsv".
func newReader(in io.Reader, kind string, o *importFlags) (reader, error) {
	br := bufio.NewReaderSize(in, 1<<20)
	switch kind {
	case "json":
		return newJSONReader(br)
	case "csv", "tsv":
		return newTableReader(br, kind, o)
	}
	return nil, fmt.Errorf("--type must be json, csv or tsv, not %q", kind)
}

// jsonReader reads a JSON array of documents, or one document per line
// (Extended JSON v2, canonical or relaxed, in both).
type jsonReader struct {
	br     *bufio.Reader
	dec    *json.Decoder // an array's; nil for lines
	line   int
	array  bool
	parsed <-chan chan []record // lines: the batches parsed ahead
	batch  []record             // lines: the rest of the current batch
}

func newJSONReader(br *bufio.Reader) (*jsonReader, error) {
	r := &jsonReader{br: br}
	first, err := firstNonSpace(br)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if first == '[' {
		r.array, r.dec = true, json.NewDecoder(br)
		if _, err := r.dec.Token(); err != nil {
			return nil, fmt.Errorf("line 1: %w", err)
		}
	}
	return r, nil
}

// firstNonSpace peeks at the input's first byte that is not white space.
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil {
			return 0, err
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

func (r *jsonReader) next() (record, bool) {
	if r.array {
		return r.nextInArray()
	}
	if r.parsed == nil {
		r.parsed = parseLines(r.br)
	}
	for len(r.batch) == 0 {
		b, ok := <-r.parsed
		if !ok {
			return record{}, false
		}
		r.batch = <-b
	}
	rec := r.batch[0]
	r.batch = r.batch[1:]
	return rec, true
}

// linesPerBatch is how many lines one parse of a line-per-document
// input takes.
const linesPerBatch = 512

// parseLines parses the lines of br on every core, a batch of lines at a
// time, and sends the batches' results in the input's order: each is a
// channel its parser fills. A few batches are parsed ahead.
func parseLines(br *bufio.Reader) <-chan chan []record {
	out := make(chan chan []record, 2*runtime.GOMAXPROCS(0))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	go func() {
		defer close(out)
		line := 0
		for {
			var texts [][]byte
			first := line + 1
			for len(texts) < linesPerBatch {
				text, err := br.ReadBytes('\n')
				if len(text) == 0 && err != nil {
					break
				}
				line++
				texts = append(texts, text)
			}
			if len(texts) == 0 {
				return
			}
			done := make(chan []record, 1)
			out <- done
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				done <- parseBatch(first, texts)
			}()
		}
	}()
	return out
}

// parseBatch parses lines numbered from first, skipping blank ones.
func parseBatch(first int, texts [][]byte) []record {
	recs := make([]record, 0, len(texts))
	for i, text := range texts {
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		recs = append(recs, decodeExtJSON(first+i, text))
	}
	return recs
}

func (r *jsonReader) nextInArray() (record, bool) {
	if !r.dec.More() {
		return record{}, false
	}
	r.line++ // the element's number: an array's lines are not tracked
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		r.array = false // the rest of the array cannot be read
		return record{line: r.line, err: err}, true
	}
	return decodeExtJSON(r.line, raw), true
}

func decodeExtJSON(line int, data []byte) record {
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON(data, false, &doc); err != nil {
		return record{line: line, err: err}
	}
	return record{line: line, doc: doc}
}

// tableReader reads CSV or TSV rows as documents: field names from the
// header line or --fields, dotted names making sub-documents, values
// typed by the column ("name.int32()") or, without types, numbers where
// they read as numbers, as mongoimport does.
type tableReader struct {
	cr     *csv.Reader
	fields []column
	line   int
}

// column is a field name and how its values read.
type column struct {
	name, kind, arg string
}

func newTableReader(br *bufio.Reader, kind string, o *importFlags) (*tableReader, error) {
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	if kind == "tsv" {
		cr.Comma, cr.LazyQuotes = '\t', true
	}
	r := &tableReader{cr: cr}
	names := splitFields(o.fields)
	if o.headerLine {
		header, err := cr.Read()
		if err != nil {
			return nil, fmt.Errorf("line 1: the header line: %w", err)
		}
		names, r.line = header, 1
	}
	if len(names) == 0 {
		return nil, errors.New("csv and tsv need --headerline or --fields")
	}
	for _, n := range names {
		c, err := parseColumn(n, o.columnsHaveTypes)
		if err != nil {
			return nil, err
		}
		r.fields = append(r.fields, c)
	}
	return r, nil
}

func splitFields(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// parseColumn reads a field name, with its type when typed:
// name.string(), name.int32(), name.int64(), name.double(),
// name.boolean(), name.auto(), and the types of import_types.go.
func parseColumn(name string, typed bool) (column, error) {
	name = strings.TrimSpace(name)
	if !typed {
		return column{name: name, kind: "auto"}, nil
	}
	paren := strings.Index(name, "(") // the type's argument may hold dots
	open := -1
	if paren > 0 {
		open = strings.LastIndex(name[:paren], ".")
	}
	if open < 0 || !strings.HasSuffix(name, ")") {
		return column{}, fmt.Errorf("column %q has no type: with --columnsHaveTypes, name it as field.type()", name)
	}
	kind, arg, _ := strings.Cut(strings.TrimSuffix(name[open+1:], ")"), "(")
	if !columnKinds[kind] {
		return column{}, fmt.Errorf("column %q: type %s() is not one of mongoimport's (auto, string, int32, int64, double, decimal, boolean, binary, date, date_go, date_ms, date_oracle)", name, kind)
	}
	c := column{name: name[:open], kind: kind, arg: arg}
	if err := checkColumnArg(&c); err != nil {
		return column{}, fmt.Errorf("column %q: %w", name, err)
	}
	return c, nil
}

func (r *tableReader) next() (record, bool) {
	row, err := r.cr.Read()
	if errors.Is(err, io.EOF) {
		return record{}, false
	}
	line, _ := r.cr.FieldPos(0)
	if err != nil {
		r.line++
		return record{line: r.line, err: err}, true
	}
	r.line = line
	doc, err := r.document(row)
	var raw bson.Raw
	if err == nil {
		raw, err = bson.Marshal(doc)
	}
	return record{line: line, doc: raw, err: err}, true
}

// document makes a row's document.
func (r *tableReader) document(row []string) (bson.D, error) {
	if len(row) > len(r.fields) {
		return nil, fmt.Errorf("%d values for %d fields", len(row), len(r.fields))
	}
	var doc bson.D
	for i, v := range row {
		val, err := typedValue(r.fields[i], v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", r.fields[i].name, err)
		}
		doc = setPath(doc, strings.Split(r.fields[i].name, "."), val)
	}
	return doc, nil
}

// typedValue reads one value as its column says.
func typedValue(c column, s string) (any, error) {
	switch c.kind {
	case "string":
		return s, nil
	case "int32":
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		return int32(n), err
	case "int64":
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case "double":
		return strconv.ParseFloat(strings.TrimSpace(s), 64)
	case "boolean":
		return strconv.ParseBool(strings.TrimSpace(s))
	}
	if v, ok, err := extraTypedValue(c, s); ok {
		return v, err
	}
	return autoValue(s), nil
}

// autoValue is a value as mongoimport reads an untyped field: a whole
// number as int32 (int64 when it does not fit), another number as a
// double, anything else as the string.
func autoValue(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if int64(int32(n)) == n {
			return int32(n)
		}
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && strings.ContainsAny(s, "0123456789") {
		return f
	}
	return s
}

// setPath sets the dotted path in doc, making sub-documents on the way.
func setPath(doc bson.D, path []string, v any) bson.D {
	for i := range doc {
		if doc[i].Key != path[0] {
			continue
		}
		if len(path) > 1 {
			sub, _ := doc[i].Value.(bson.D)
			doc[i].Value = setPath(sub, path[1:], v)
		} else {
			doc[i].Value = v
		}
		return doc
	}
	if len(path) > 1 {
		return append(doc, bson.E{Key: path[0], Value: setPath(nil, path[1:], v)})
	}
	return append(doc, bson.E{Key: path[0], Value: v})
}

package query

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The data-driven tests live in testdata/*. Each case is a command line,
// optional input lines, "----", and the expected output up to a blank line:
//
//	docs                      input: one extended-JSON document per line
//	filter <json>             output: matching _ids of the current docs
//	where <json>              filter as a command's own query ($where
//	                          allowed, CompileQueryFilter)
//	compare                   input: "a, b" per line; output: line => -1|0|1
//	project <json>            output: each projected document
//	sort <json>               output: _ids in sorted order
//	update <json>             output: changed|same <doc> per document
//	upsert                    input: filter line, update line; output: doc
//	expr <json>               output: the expression's value per document
//	aggregate <json>          output: the pipeline's documents over docs
//	text <index spec json>    input: one filter with $text per line;
//	                          output: per filter, "_id score" of each
//	                          match, by _id (text_datadriven_test.go)
//	validate <json>           output: per document, pass or the details
//	                          of its validation failure (errInfo.details)
//	                          (agg_datadriven_test.go lists its options)
//
// filter, project, sort, update and expr take option lines as input:
// "query <json>" (the filter "$" refers to), "arrayFilters <json>",
// "collation <json>" and "let <json>"; and for JavaScript "noscripting"
// (--noscripting) and "jsTimeoutMS <n>" (the bound of one call).
//
// Errors print as "error <code> <codeName>: <msg>". Run with -rewrite to
// regenerate expected outputs after reviewing a change.
var rewrite = flag.Bool("rewrite", false, "rewrite expected outputs in testdata")

type ddCase struct {
	cmd, args string
	input     []string
	expected  []string
}

func TestDataDriven(t *testing.T) {
	files, _ := filepath.Glob("testdata/*")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runFile(t, file) })
	}
}

func runFile(t *testing.T, file string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	var docs []bsoncore.Document
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	next := func() (string, bool) {
		ok := sc.Scan()
		line++
		return sc.Text(), ok
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		start := line
		c := ddCase{}
		c.cmd, c.args, _ = strings.Cut(l, " ")
		for l, ok = next(); ok && l != "----"; l, ok = next() {
			c.input = append(c.input, l)
		}
		for l, ok = next(); ok && l != ""; l, ok = next() {
			c.expected = append(c.expected, l)
		}
		got := runCase(t, &c, &docs)
		out.WriteString(strings.Join(append([]string{c.cmd + sep(c.args)}, c.input...), "\n") + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		out.WriteString("\n")
		if !*rewrite && strings.Join(got, "\n") != strings.Join(c.expected, "\n") {
			t.Errorf("%s:%d: %s %s\ngot:\n%s\nwant:\n%s", file, start, c.cmd, c.args,
				strings.Join(got, "\n"), strings.Join(c.expected, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// validateCase runs a collection validator over the documents.
func validateCase(t *testing.T, c *ddCase, docs []bsoncore.Document) []string {
	v, err := CompileValidator(mustDoc(t, c.args), nil)
	if err != nil {
		return []string{errString(err)}
	}
	var out []string
	for _, d := range docs {
		if v.Match(d) {
			out = append(out, "pass")
		} else {
			out = append(out, typedDoc(v.Details(d)))
		}
	}
	return out
}

func sep(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

func runCase(t *testing.T, c *ddCase, docs *[]bsoncore.Document) []string {
	switch c.cmd {
	case "docs":
		*docs = nil
		for _, in := range c.input {
			*docs = append(*docs, mustDoc(t, in))
		}
		return nil
	case "compare":
		var out []string
		for _, in := range c.input {
			vals := value.ArrayValues(mustDoc(t, `{"v": [`+in+`]}`).Lookup("v").Data)
			out = append(out, fmt.Sprintf("%s => %d", in, value.Compare(vals[0], vals[1])))
		}
		return out
	case "filter", "where":
		o, err := parseOptions(t, c.input)
		if err != nil {
			return []string{errString(err)}
		}
		compile := CompileFilterEnv
		if c.cmd == "where" {
			compile = CompileQueryFilter
		}
		f, err := compile(mustDoc(t, c.args), o.env)
		if err != nil {
			return []string{errString(err)}
		}
		var ids []string
		for _, d := range *docs {
			if f.Match(d) {
				ids = append(ids, typedValue(d.Lookup("_id")))
			}
		}
		if f.Err() != nil {
			return []string{errString(f.Err())}
		}
		return []string{"[" + strings.Join(ids, ", ") + "]"}
	case "expr":
		o, err := parseOptions(t, c.input)
		if err != nil {
			return []string{errString(err)}
		}
		x, err := CompileExpr(mustValue(t, c.args), o.env)
		if err != nil {
			return []string{errString(err)}
		}
		var out []string
		for _, d := range *docs {
			v, err := EvalExpr(x, d, o.env)
			switch {
			case err != nil:
				out = append(out, errString(err))
			case v.Type == 0:
				out = append(out, "missing")
			default:
				out = append(out, typedValue(v))
			}
		}
		return out
	case "project":
		o, err := parseOptions(t, c.input)
		if err != nil {
			return []string{errString(err)}
		}
		p, err := CompileProjectionOpts(mustDoc(t, c.args), ProjectionOptions{Env: o.env, Query: o.query})
		if err != nil {
			return []string{errString(err)}
		}
		var out []string
		for _, d := range *docs {
			r, err := p.Apply(d)
			if err != nil {
				out = append(out, errString(err))
				continue
			}
			out = append(out, typedDoc(r))
		}
		return out
	case "validate":
		return validateCase(t, c, *docs)
	case "sort":
		o, err := parseOptions(t, c.input)
		if err != nil {
			return []string{errString(err)}
		}
		s, err := CompileSortEnv(mustDoc(t, c.args), o.env)
		if err != nil {
			return []string{errString(err)}
		}
		sorted := append([]bsoncore.Document(nil), *docs...)
		sort.SliceStable(sorted, func(i, j int) bool { return s.Compare(sorted[i], sorted[j]) < 0 })
		var ids []string
		for _, d := range sorted {
			ids = append(ids, typedValue(d.Lookup("_id")))
		}
		return []string{strings.Join(ids, " ")}
	case "update":
		o, err := parseOptions(t, c.input)
		if err != nil {
			return []string{errString(err)}
		}
		u, err := CompileUpdateOpts(mustValue(t, c.args), UpdateOptions{Env: o.env, Query: o.query, ArrayFilters: o.arrayFilters})
		if err != nil {
			return []string{errString(err)}
		}
		var out []string
		for _, d := range *docs {
			r, changed, err := u.Apply(d, false)
			switch {
			case err != nil:
				out = append(out, errString(err))
			case changed:
				out = append(out, "changed "+typedDoc(r))
			default:
				out = append(out, "same "+typedDoc(r))
			}
		}
		return out
	case "aggregate":
		return runAggregate(t, c, *docs)
	case "upsert":
		f, err := CompileFilter(mustDoc(t, c.input[0]))
		if err != nil {
			return []string{errString(err)}
		}
		u, err := CompileUpdate(mustValue(t, c.input[1]))
		if err != nil {
			return []string{errString(err)}
		}
		d, err := Upsert(f, u)
		if err != nil {
			return []string{errString(err)}
		}
		return []string{typedDoc(d)}
	case "text":
		return textCase(t, c, *docs)
	}
	t.Fatalf("unknown command %q", c.cmd)
	return nil
}

// ddOptions are the option lines of a case.
type ddOptions struct {
	env          *Env
	query        *Filter
	arrayFilters []bsoncore.Document
}

func parseOptions(t *testing.T, lines []string) (*ddOptions, error) {
	o := &ddOptions{}
	var coll *value.Collation
	var let bsoncore.Document
	var query bsoncore.Document
	var jsEngine *js.Engine
	for _, l := range lines {
		name, arg, _ := strings.Cut(l, " ")
		var err error
		switch name {
		case "query":
			query = mustDoc(t, arg)
		case "arrayFilters":
			for _, v := range value.ArrayValues(mustValue(t, arg).Data) {
				o.arrayFilters = append(o.arrayFilters, v.Data)
			}
		case "collation":
			coll, err = value.ParseCollation(mustDoc(t, arg))
		case "let":
			let = mustDoc(t, arg)
		case "noscripting":
			jsEngine = js.New(js.Config{Disabled: true})
		case "jsTimeoutMS":
			ms, perr := strconv.Atoi(arg)
			if perr != nil {
				t.Fatal(perr)
			}
			jsEngine = js.New(js.Config{Timeout: time.Duration(ms) * time.Millisecond})
		default:
			t.Fatalf("unknown option line %q", l)
		}
		if err != nil {
			return nil, err
		}
	}
	env, err := NewEnv(coll, let)
	if err != nil {
		return nil, err
	}
	if jsEngine != nil {
		env.JS = jsEngine
	}
	o.env = env
	if query != nil {
		if o.query, err = CompileFilterEnv(query, env); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func mustDoc(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("bad extJSON %q: %v", s, err)
	}
	return bsoncore.Document(raw)
}

// mustValue parses any extJSON value (documents and arrays for updates).
func mustValue(t testing.TB, s string) bsoncore.Value {
	return mustDoc(t, `{"v": `+s+`}`).Lookup("v")
}

func errString(err error) string {
	var me *mongoerr.Error
	if !errors.As(err, &me) {
		return "non-mongo error: " + err.Error()
	}
	return fmt.Sprintf("error %d %s: %s", me.Code, me.Code.Name(), me.Msg)
}

// typedDoc renders a document like FormatValue but keeps numeric types
// visible: NumberLong(1), NumberDecimal("1"), doubles always with a point.
func typedDoc(d bsoncore.Document) string {
	return typedValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}

func typedValue(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt64:
		return "NumberLong(" + value.FormatNumber(v) + ")"
	case bsoncore.TypeDecimal128:
		return `NumberDecimal("` + value.FormatNumber(v) + `")`
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		var parts []string
		it := value.NewIter(v.Data)
		for {
			k, e, ok := it.Next()
			if !ok {
				break
			}
			if v.Type == bsoncore.TypeArray {
				parts = append(parts, typedValue(e))
			} else {
				parts = append(parts, string(k)+": "+typedValue(e))
			}
		}
		if v.Type == bsoncore.TypeArray {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return value.Format(v)
}

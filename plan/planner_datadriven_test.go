package plan

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// The planner's data-driven tests live in testdata/planner*. Each case is
// a command line, optional input lines, "----", and the expected output
// up to a blank line; "#" starts a comment line:
//
//	indexes                 input: one index key pattern per line;
//	                        collection c is made anew with those indexes
//	                        (named as mongod names them); output: ok
//	plan <filter json>      input: "sort <json>" and "hint <json>" lines;
//	                        output: the winning plan, then each rejected
//	                        plan, as explain's stages from the root down
//	                        ("FETCH < IXSCAN a_1 {bounds}")
//	docs <n>                inserts n documents {_id: i, a: i % 10,
//	                        b: i % 3, c: "s<i>"} into c; output: ok
//	run <filter json>       input: "sort", "hint", "skip", "limit" and
//	                        "projection" lines; runs the read as find does
//	                        (Execute) and explains it at executionStats;
//	                        output: the explained winning plan, then
//	                        "returned <n>:" and the documents returned.
//	                        The test fails when explain's nReturned is not
//	                        what Execute returned.
//
// Run with -rewrite-plans to regenerate expected outputs after reviewing
// a change.
var rewritePlans = flag.Bool("rewrite-plans", false, "rewrite expected outputs in plan/testdata")

func TestPlannerDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/planner*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no planner test files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runPlannerFile(t, file) })
	}
}

// plannerCase is one case of a file.
type plannerCase struct {
	cmd, args string
	input     []string
	expected  []string
}

func runPlannerFile(t *testing.T, file string) {
	cases, lines := readPlannerCases(t, file)
	env := newPlannerEnv(t)
	var out []string
	changed := false
	for _, c := range cases {
		got := env.run(t, c)
		if strings.Join(got, "\n") != strings.Join(c.expected, "\n") {
			if !*rewritePlans {
				t.Errorf("%s: %s %s\n got:\n%s\nwant:\n%s", file, c.cmd, c.args, strings.Join(got, "\n"), strings.Join(c.expected, "\n"))
			}
			changed = true
		}
		out = append(out, strings.TrimSpace(c.cmd+" "+c.args))
		out = append(out, c.input...)
		out = append(out, "----")
		out = append(out, got...)
		out = append(out, "")
	}
	if *rewritePlans && changed {
		text := strings.Join(append(lines, out...), "\n")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readPlannerCases parses a file; lines are its leading comment lines,
// kept by a rewrite.
func readPlannerCases(t *testing.T, file string) ([]plannerCase, []string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []plannerCase
	var head []string
	var cur *plannerCase
	inExpected := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && (strings.HasPrefix(line, "#") || line == ""):
			if len(cases) == 0 {
				head = append(head, line)
			}
		case cur == nil:
			cmd, args, _ := strings.Cut(line, " ")
			cur = &plannerCase{cmd: cmd, args: args}
		case line == "----" && !inExpected:
			inExpected = true
		case inExpected && line == "":
			cases = append(cases, *cur)
			cur, inExpected = nil, false
		case inExpected:
			cur.expected = append(cur.expected, line)
		default:
			cur.input = append(cur.input, line)
		}
	}
	if cur != nil {
		cases = append(cases, *cur)
	}
	return cases, head
}

// plannerEnv is an engine with one database whose collection c the
// cases plan over.
type plannerEnv struct {
	db *storage.Database
}

func newPlannerEnv(t *testing.T) *plannerEnv {
	e, err := storage.Open(t.TempDir(), storage.Options{Language: storage.Language{
		PartialFilter: func(f bsoncore.Document, c *value.Collation) (index.Matcher, error) {
			m, err := query.CompilePartialFilter(f, c)
			if err != nil {
				return nil, err
			}
			return m, nil
		},
		Validator: func(v bsoncore.Document, c *value.Collation) (index.Matcher, error) {
			m, err := query.CompileValidator(v, c)
			if err != nil {
				return nil, err
			}
			return m, nil
		},
	}}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	db, err := e.Database(context.Background(), "db", true)
	if err != nil {
		t.Fatal(err)
	}
	return &plannerEnv{db: db}
}

func (env *plannerEnv) run(t *testing.T, c plannerCase) []string {
	switch c.cmd {
	case "indexes":
		return env.indexes(t, c.input)
	case "plan":
		return env.plan(t, c.args, c.input)
	case "docs":
		return env.docs(t, c.args)
	case "run":
		return env.runRead(t, c.args, c.input)
	}
	t.Fatalf("unknown command %q", c.cmd)
	return nil
}

// indexes makes collection c anew with the indexes given: a key pattern,
// or a whole spec (with "key") for an index with options.
func (env *plannerEnv) indexes(t *testing.T, patterns []string) []string {
	var raws []bsoncore.Document
	for _, p := range patterns {
		key := parseJSON(t, p)
		b := bsoncore.NewDocumentBuilder().AppendInt32("v", 2)
		if spec, ok := key.Lookup("key").DocumentOK(); ok {
			els, _ := key.Elements()
			b.AppendString("name", indexName(spec))
			for _, el := range els {
				b.AppendValue(el.Key(), el.Value())
			}
			raws = append(raws, b.Build())
			continue
		}
		raws = append(raws, b.AppendDocument("key", key).AppendString("name", indexName(key)).Build())
	}
	ctx := context.Background()
	err := env.db.Write(ctx, func(tx *storage.Tx) error {
		if err := tx.DropCollection("c"); err != nil && !errors.Is(err, storage.ErrNamespaceNotFound) {
			return err
		}
		if _, err := tx.CreateCollection(ctx, "c", nil); err != nil {
			return err
		}
		return tx.SetIndexes(ctx, "c", raws)
	})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return []string{"ok"}
}

// indexName is mongod's default name of an index: each key and its value
// joined by "_".
func indexName(key bsoncore.Document) string {
	els, _ := key.Elements()
	var parts []string
	for _, el := range els {
		v := el.Value()
		if n, ok := value.AsInt64(v); ok {
			parts = append(parts, el.Key(), strconv.FormatInt(n, 10))
		} else {
			parts = append(parts, el.Key(), string(value.RawString(v)))
		}
	}
	return strings.Join(parts, "_")
}

func (env *plannerEnv) plan(t *testing.T, filter string, input []string) []string {
	rd, err := readOf(t, filter, input)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	e, err := Explain(context.Background(), env.snapshot, "c", &Explained{Kind: "find"}, rd, "queryPlanner")
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	out := []string{describeStages(e.WinningPlan)}
	rejected, _ := e.RejectedPlans.Values()
	for _, r := range rejected {
		out = append(out, "rejected: "+describeStages(r.Document()))
	}
	return out
}

func (env *plannerEnv) snapshot() (*storage.Snapshot, error) {
	return env.db.BranchSnapshot(context.Background(), storage.DefaultBranch)
}

// readOf compiles a case's filter and input lines into a find's read.
func readOf(t *testing.T, filter string, input []string) (*Read, error) {
	rd := &Read{FilterDoc: parseJSON(t, filter)}
	for _, line := range input {
		opt, arg, _ := strings.Cut(line, " ")
		switch opt {
		case "sort":
			rd.SortDoc = parseJSON(t, arg)
		case "hint":
			rd.Hint = parseJSON(t, "{\"h\": "+arg+"}").Lookup("h")
		case "projection":
			rd.ProjectionDoc = parseJSON(t, arg)
		case "skip", "limit":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if opt == "skip" {
				rd.Skip = n
			} else {
				rd.Limit = n
			}
		default:
			t.Fatalf("unknown plan option %q", line)
		}
	}
	var err error
	if rd.Filter, err = query.CompileFilter(rd.FilterDoc); err != nil {
		return nil, err
	}
	if rd.SortDoc != nil {
		if rd.Sort, err = query.CompileSort(rd.SortDoc); err != nil {
			return nil, err
		}
	}
	if rd.ProjectionDoc != nil {
		if rd.Projection, err = query.CompileProjection(rd.ProjectionDoc); err != nil {
			return nil, err
		}
	}
	return rd, nil
}

// docs inserts n documents into c.
func (env *plannerEnv) docs(t *testing.T, arg string) []string {
	n, err := strconv.Atoi(arg)
	if err != nil {
		t.Fatalf("docs %s: %v", arg, err)
	}
	ctx := context.Background()
	err = env.db.Write(ctx, func(tx *storage.Tx) error {
		for i := range n {
			doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("a", int32(i%10)).
				AppendInt32("b", int32(i%3)).AppendString("c", "s"+strconv.Itoa(i)).Build()
			if err := tx.Insert(ctx, "c", doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return []string{"ok"}
}

// runRead runs a read with Execute and explains it, and checks that
// explain counted what Execute returned.
func (env *plannerEnv) runRead(t *testing.T, filter string, input []string) []string {
	rd, err := readOf(t, filter, input)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	ctx := context.Background()
	snap, err := env.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Execute(ctx, snap, "c", rd)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	docs, err := query.Drain(ctx, ex.Source)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	rd2, _ := readOf(t, filter, input) // explain prepares plans of its own
	e, err := Explain(ctx, env.snapshot, "c", &Explained{Kind: "find"}, rd2, "executionStats")
	if err != nil {
		return []string{"explain error: " + err.Error()}
	}
	if n, _ := value.AsInt64(e.ExecutionStats.Lookup("nReturned")); n != int64(len(docs)) {
		t.Errorf("run %s %v: explain returned %d, Execute %d", filter, input, n, len(docs))
	}
	out := []string{describeStages(e.WinningPlan), "returned " + strconv.Itoa(len(docs)) + ":"}
	for _, d := range docs {
		out = append(out, bson.Raw(d).String())
	}
	return out
}

// describeStages is a stage tree from the root down, with each index
// scan's index and bounds.
func describeStages(d bsoncore.Document) string {
	var parts []string
	for d != nil {
		stage, _ := d.Lookup("stage").StringValueOK()
		if name, ok := d.Lookup("indexName").StringValueOK(); ok {
			stage += " " + name
		}
		if b, ok := d.Lookup("indexBounds").DocumentOK(); ok {
			stage += " " + bson.Raw(b).String()
		}
		if dir, _ := d.Lookup("direction").StringValueOK(); dir == "backward" && stage == "COLLSCAN" {
			stage += " backward"
		}
		parts = append(parts, stage)
		d, _ = d.Lookup("inputStage").DocumentOK()
	}
	return strings.Join(parts, " < ")
}

func parseJSON(t *testing.T, s string) bsoncore.Document {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

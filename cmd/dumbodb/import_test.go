package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// importRun runs `dumbodb import` against p and returns its output and
// exit code.
func importRun(t *testing.T, p *dumboproc.Proc, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(dumboproc.Binary(t), append([]string{"import", "--uri", p.URL()}, args...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportSubcommand: NDJSON with a bad line, a JSON array of Extended
// JSON, typed CSV with quoted fields and an embedded newline, upsert and
// merge modes, a branch, and --commit.
func TestImportSubcommand(t *testing.T) {
	p := dumboproc.StartT(t, t.TempDir())
	ctx := context.Background()
	db := client(t, p).Database("shop")
	ndjson := writeFile(t, "a.json", `{"_id": 1, "n": "one"}
{"_id": 2, "n": "two"}
{"_id": 3, "n": 
{"_id": 4, "n": {"$numberLong": "4"}}
`)
	out, errs, code := importRun(t, p, "--db", "shop", "--collection", "c", "--file", ndjson)
	if code != 1 || !strings.Contains(out, "3 document(s) imported, 1 failed") || !strings.Contains(errs, "line 3:") {
		t.Fatalf("NDJSON with a bad line: exit %d\n%s%s", code, out, errs)
	}
	array := writeFile(t, "b.json", `[{"_id": 10, "when": {"$date": "2026-01-02T03:04:05Z"}}, {"_id": 11, "big": {"$numberLong": "9007199254740993"}}]`)
	if out, errs, code := importRun(t, p, "--db", "shop", "--collection", "c", "--file", array); code != 0 {
		t.Fatalf("JSON array: exit %d\n%s%s", code, out, errs)
	}
	var got bson.M
	if err := db.Collection("c").FindOne(ctx, bson.M{"_id": 11}).Decode(&got); err != nil || got["big"] != int64(9007199254740993) {
		t.Fatalf("Extended JSON long: %v %v", got, err)
	}
	csvText := "_id.int32(),name.string(),price.double(),ok.boolean(),addr.city.string()\n" +
		"20,\"Smith, J\",1.5,true,Paris\n21,\"two\nlines\",2,false,Lyon\n"
	csvFile := writeFile(t, "c.csv", csvText)
	if err := db.RunCommand(ctx, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feature"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := importRun(t, p, "--db", "shop@feature", "--collection", "t", "--type", "csv",
		"--headerline", "--columnsHaveTypes", "--file", csvFile, "--commit", "load t"); code != 0 {
		t.Fatalf("typed CSV: exit %d\n%s%s", code, out, errs)
	}
	feature := client(t, p).Database("shop@feature")
	got = nil
	if err := feature.Collection("t").FindOne(ctx, bson.M{"_id": 21}).Decode(&got); err != nil ||
		got["name"] != "two\nlines" || got["price"] != 2.0 || got["ok"] != false || got["addr"].(bson.D)[0].Value != "Lyon" {
		t.Fatalf("CSV row: %v %v", got, err)
	}
	var log struct{ Commits []struct{ Message string } }
	if err := feature.RunCommand(ctx, bson.D{{Key: "dumboLog", Value: 1}, {Key: "limit", Value: 1}}).Decode(&log); err != nil ||
		len(log.Commits) != 1 || log.Commits[0].Message != "load t" {
		t.Fatalf("the import's commit: %+v %v", log, err)
	}
	if n, _ := db.Collection("t").CountDocuments(ctx, bson.M{}); n != 0 {
		t.Errorf("the import into feature wrote %d documents on main", n)
	}

	merge := writeFile(t, "m.json", `{"_id": 1, "extra": true}
{"_id": 99, "n": "new"}
`)
	if out, errs, code := importRun(t, p, "--db", "shop", "--collection", "c", "--mode", "merge", "--file", merge); code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errs)
	}
	got = nil
	if err := db.Collection("c").FindOne(ctx, bson.M{"_id": 1}).Decode(&got); err != nil || got["n"] != "one" || got["extra"] != true {
		t.Fatalf("merged document %v %v", got, err)
	}
	if out, errs, code := importRun(t, p, "--db", "shop", "--collection", "c", "--mode", "upsert", "--file", merge); code != 0 {
		t.Fatalf("upsert: exit %d\n%s%s", code, out, errs)
	}
	got = nil
	if err := db.Collection("c").FindOne(ctx, bson.M{"_id": 1}).Decode(&got); err != nil || got["n"] != nil {
		t.Fatalf("upserted (replaced) document %v %v", got, err)
	}
	if _, errs, code := importRun(t, p, "--db", "shop", "--collection", "c", "--drop", "--file", ndjson, "--stopOnError"); code != 1 || !strings.Contains(errs, "stopped at line 3") {
		t.Fatalf("--stopOnError: exit %d %s", code, errs)
	}
	if n, _ := db.Collection("c").CountDocuments(ctx, bson.M{}); n != 2 {
		t.Errorf("after --drop and a stop at line 3: %d documents, want 2", n)
	}
}

// TestImportBulkPaths: --bulk through a running server's dumboBulkLoad
// and --data-dir into a stopped server's directory load what they can,
// report a bad line and a duplicate _id by line, commit with --commit,
// and keep everything across a restart.
func TestImportBulkPaths(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir)
	ctx := context.Background()
	var text strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&text, `{"_id": %d, "n": "doc %d"}`+"\n", (i*7)%5000, i)
	}
	text.WriteString("{\"_id\": 1, \"n\": \"again\"}\n{\"_id\": \n")
	ndjson := writeFile(t, "bulk.json", text.String())
	out, errs, code := importRun(t, p, "--bulk", "--db", "shop", "--collection", "bulk", "--file", ndjson, "--commit", "bulk load")
	if code != 1 || !strings.Contains(out, "5000 document(s) imported, 2 failed") ||
		!strings.Contains(errs, "line 5001: ") || !strings.Contains(errs, "line 5002: ") {
		t.Fatalf("--bulk: exit %d\n%s%s", code, out, errs)
	}
	first := client(t, p)
	shop := first.Database("shop")
	var got bson.M
	if err := shop.Collection("bulk").FindOne(ctx, bson.M{"_id": 7}).Decode(&got); err != nil || got["n"] != "doc 1" {
		t.Fatalf("document 7: %v %v", got, err)
	}
	if n, err := first.Database("shop@main~0").Collection("bulk").CountDocuments(ctx, bson.M{}); err != nil || n != 5000 {
		t.Fatalf("the committed load holds %d documents (%v)", n, err)
	}
	if _, errs, code := importRun(t, p, "--bulk", "--mode", "upsert", "--db", "shop", "--collection", "x", "--file", ndjson); code != 2 || !strings.Contains(errs, "insert mode only") {
		t.Errorf("--bulk --mode upsert: exit %d %s", code, errs)
	}
	first.Disconnect(ctx) // before the server goes: a client of a stopped server waits to disconnect
	p.StopT(t, syscall.SIGTERM)

	cmd := exec.Command(dumboproc.Binary(t), "import", "--data-dir", dir, "--db", "shop", "--collection", "offline", "--file", ndjson, "--stopOnError")
	outb, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(outb), "5000 document(s) imported, 1 failed") {
		t.Fatalf("--data-dir: %v\n%s", err, outb)
	}
	p = dumboproc.StartT(t, dir)
	shop = client(t, p).Database("shop")
	for coll, want := range map[string]int64{"bulk": 5000, "offline": 5000} {
		if n, err := shop.Collection(coll).CountDocuments(ctx, bson.M{"n": bson.M{"$exists": true}}); err != nil || n != want {
			t.Errorf("%s after a restart: %d documents (%v), want %d", coll, n, err, want)
		}
	}
}

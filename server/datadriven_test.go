package server_test

import (
	"bufio"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The commands' data-driven tests live in testdata/commands/*, a file per
// command. Each case is a line "run <db> <command as extended JSON>" (the
// database name Go-quoted when it holds a space),
// "----", and the expected reply up to a blank line: "error <code>
// <codeName>: <errmsg>" for a command error, "writeError <index> <code>:
// <errmsg>" for each write error, otherwise the reply (with any
// writeConcernError) as relaxed extended JSON without the fields that
// change from run to run ($clusterTime, operationTime; a cursor's id
// shows as 0 or "open").
// Every file runs against a fresh server, its cases in order. Run with
// -rewrite to regenerate expected outputs after reviewing a change.
var rewriteCommands = flag.Bool("rewrite", false, "rewrite expected outputs in testdata/commands")

type commandCase struct {
	db, cmd       string
	expected, got []string
}

func TestCommandsDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/commands/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no data-driven command files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			runCommandFile(t, file)
		})
	}
}

func runCommandFile(t *testing.T, file string) {
	lines, cases := readCommandFile(t, file)
	cl := startServer(t).client()
	changed := false
	for _, c := range cases {
		c.got = runCommandCase(t, cl, c)
		if strings.Join(c.got, "\n") != strings.Join(c.expected, "\n") {
			changed = true
			if !*rewriteCommands {
				t.Errorf("%s: run %s %s\n got:\n%s\n want:\n%s", file, c.db, c.cmd, strings.Join(c.got, "\n"), strings.Join(c.expected, "\n"))
			}
		}
	}
	if *rewriteCommands && changed {
		rewriteCommandFile(t, file, lines, cases)
	}
}

// readCommandFile reads the cases, keeping the lines for a rewrite.
func readCommandFile(t *testing.T, file string) ([]string, []*commandCase) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []*commandCase
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rest, ok := strings.CutPrefix(line, "run ")
		db, cmd, ok2 := cutDBName(rest)
		if !ok || !ok2 || i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: want \"run <db> <json>\" and \"----\", got %q", file, i+1, line)
		}
		c := &commandCase{db: db, cmd: cmd}
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			c.expected = append(c.expected, lines[i])
		}
		cases = append(cases, c)
	}
	return lines, cases
}

// cutDBName splits "<db> <json>"; a database name that holds a space or
// another character a case must spell out is a Go-quoted string.
func cutDBName(rest string) (db, cmd string, ok bool) {
	if !strings.HasPrefix(rest, `"`) {
		return strings.Cut(rest, " ")
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", "", false
	}
	db, _ = strconv.Unquote(quoted)
	cmd, ok = strings.CutPrefix(rest[len(quoted):], " ")
	return db, cmd, ok
}

func runCommandCase(t *testing.T, cl *mongo.Client, c *commandCase) []string {
	var cmd bson.D
	if err := bson.UnmarshalExtJSON([]byte(c.cmd), false, &cmd); err != nil {
		t.Fatalf("run %s: %v", c.cmd, err)
	}
	raw, err := cl.Database(c.db).RunCommand(ctx, cmd).Raw()
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		var out []string
		for _, e := range we.WriteErrors {
			out = append(out, "writeError "+strconv.Itoa(e.Index)+" "+strconv.Itoa(e.Code)+": "+e.Message)
		}
		return out
	case errors.As(err, &ce):
		return []string{"error " + strconv.Itoa(int(ce.Code)) + " " + ce.Name + ": " + ce.Message}
	case errors.As(err, &we) && raw != nil:
		// Only a writeConcernError: the write is applied, and the reply,
		// which carries the error, shows as any reply.
	case err != nil:
		return []string{"error: " + err.Error()}
	}
	var reply bson.D
	if err := bson.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	b, err := bson.MarshalExtJSON(stableReply(reply), false, false)
	if err != nil {
		t.Fatal(err)
	}
	return []string{string(b)}
}

// stableReply drops what changes from run to run.
func stableReply(reply bson.D) bson.D {
	var out bson.D
	for _, e := range reply {
		switch e.Key {
		case "$clusterTime", "operationTime":
			continue
		case "cursor":
			if d, ok := e.Value.(bson.D); ok {
				e.Value = stableCursor(d)
			}
		case "command": // an explain's, with the maxTimeMS the client's timeout adds
			if d, ok := e.Value.(bson.D); ok {
				e.Value = withoutKey(d, "maxTimeMS")
			}
		}
		out = append(out, e)
	}
	return out
}

func withoutKey(d bson.D, key string) bson.D {
	var out bson.D
	for _, e := range d {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

func stableCursor(cur bson.D) bson.D {
	var out bson.D
	for _, e := range cur {
		if id, ok := e.Value.(int64); ok && e.Key == "id" && id != 0 {
			e.Value = "open"
		}
		out = append(out, e)
	}
	return out
}

func rewriteCommandFile(t *testing.T, file string, lines []string, cases []*commandCase) {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	next := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "run ") {
			w.WriteString(line + "\n")
			continue
		}
		c := cases[next]
		next++
		w.WriteString(line + "\n----\n")
		for _, g := range c.got {
			w.WriteString(g + "\n")
		}
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
		}
		if i < len(lines) {
			w.WriteString("\n")
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// runInspect is `dumbodb inspect [--check] [--records] DIR`: it prints a
// data directory's format versions, databases, branches, tags,
// collections, index maps and write-ahead logs without a server, and
// with --check walks every chunk the databases reach. It exits 1 when it
// cannot read something or the check finds a problem.
func runInspect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dumbodb inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "walk every chunk reachable from every branch, tag and working set, and report missing or damaged ones")
	records := fs.Bool("records", true, "list each write-ahead log record")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dumbodb inspect [--check] [--records=false] DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	rep, err := storage.Inspect(context.Background(), fs.Arg(0),
		storage.InspectOptions{Check: *check, Language: server.StorageLanguage()})
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb inspect: %v\n", err)
		return 1
	}
	if printDirReport(stdout, rep, *records) {
		return 1
	}
	return 0
}

// printDirReport writes rep and reports whether it holds a problem.
func printDirReport(w io.Writer, rep *storage.DirReport, records bool) bool {
	bad := false
	for _, f := range rep.Files {
		if f.Err != nil {
			fmt.Fprintf(w, "file %s: %s: %v\n", f.Path, f.Format, f.Err)
			bad = true
			continue
		}
		fmt.Fprintf(w, "file %s: %s version %d\n", f.Path, f.Format, f.Version)
	}
	for _, db := range rep.Databases {
		if printDatabase(w, db, records) {
			bad = true
		}
	}
	return bad
}

func printDatabase(w io.Writer, db storage.DatabaseReport, records bool) bool {
	fmt.Fprintf(w, "database %s: %s\n", db.Name, db.Store)
	for _, b := range db.Branches {
		merging := ""
		if b.Merging {
			merging = ", stopped at conflicts"
		}
		fmt.Fprintf(w, "  branch %s: head %s, working root version %d at log record %d%s\n",
			b.Name, b.Head, b.RootVersion, b.WorkingLSN, merging)
		for _, c := range b.Collections {
			fmt.Fprintf(w, "    %s %s: %d documents, map %s\n", c.Kind, c.Name, c.Documents, c.Map)
			for _, ix := range c.Indexes {
				key, _ := bson.MarshalExtJSON(bson.Raw(ix.Key), false, false)
				fmt.Fprintf(w, "      index %s %s: %d entries, map %s\n", ix.Name, key, ix.Entries, ix.Map)
			}
		}
	}
	for _, t := range db.Tags {
		fmt.Fprintf(w, "  tag %s: commit %s\n", t.Name, t.Commit)
	}
	bad := printLog(w, db, records)
	if c := db.Check; c != nil {
		fmt.Fprintf(w, "  check: %d chunks, %d bytes, %d problems\n", c.Chunks, c.Bytes, len(c.Problems)+c.MoreProblems)
		for _, p := range c.Problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
		if c.MoreProblems > 0 {
			fmt.Fprintf(w, "    and %d more\n", c.MoreProblems)
		}
		bad = bad || len(c.Problems) > 0
	}
	if db.Err != nil {
		fmt.Fprintf(w, "  error: %v\n", db.Err)
		bad = true
	}
	return bad
}

func printLog(w io.Writer, db storage.DatabaseReport, records bool) bool {
	bad := false
	for _, s := range db.WAL {
		fmt.Fprintf(w, "  log segment %020d: %d bytes, version %d, %d records\n", s.First, s.Bytes, s.Version, s.Records)
		if s.Err != nil {
			fmt.Fprintf(w, "    %v\n", s.Err)
			bad = true
		}
	}
	if records {
		for _, r := range db.Records {
			fmt.Fprintf(w, "    record %d: %d bytes, %s\n", r.LSN, r.Bytes, r.Summary)
		}
	}
	return bad
}

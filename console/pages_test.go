package console_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestPagesShowWhatTheCommandsSay opens every page of a database with
// branches, a tag and uncommitted changes and checks what each shows.
func TestPagesShowWhatTheCommandsSay(t *testing.T) {
	f := startConsole(t, false)
	first, feature := f.seedShop()
	b := f.browser()
	pages := []struct {
		path   string
		want   []string
		absent []string
	}{
		{"", []string{`href="/console/db/shop"`, "Size on disk"}, nil},
		{"db/shop", []string{"feature", "more apples", "1 / 0", "uncommitted changes", "v1", `href="/console/db/shop/c/items?rev=main"`, "Create branch"}, nil},
		{"db/shop?rev=v1", []string{"Collections at v1", `href="/console/db/shop/c/items?rev=v1"`}, nil},
		{"db/shop/log", []string{"stock the shelves", "Initialize database", `<span class="ref">main</span>`, `<span class="tag">v1</span>`, "<svg"}, nil},
		{"db/shop/log?rev=feature", []string{"more apples", "stock the shelves"}, nil},
		{"db/shop/log?rev=feature&collection=items&_id=2", []string{"stock the shelves"}, []string{"more apples", "Initialize database"}},
		{"db/shop/log?rev=feature&collection=items", []string{"more apples", "stock the shelves"}, []string{"Initialize database"}},
		{"db/shop/diff", []string{"plum", "1 added"}, nil},
		{"db/shop/diff?commit=" + feature, []string{"more apples", "parent", first[:8], `<th scope="row" class="mono">qty</th>`, "<code>5</code>", "<code>9</code>"}, nil},
		{"db/shop/diff?from=main&to=feature", []string{"qty", "1 modified"}, nil},
		{"db/shop/c/items", []string{`"name": "apple"`, `"name": "plum"`, "Page 1"}, nil},
		{"db/shop/c/items?rev=v1&filter=" + url.QueryEscape(`{"qty": {"$gt": 4}}`), []string{`"name": "apple"`}, nil},
		{"db/shop/c/items?sort=" + url.QueryEscape(`{"_id": -1}`) + "&projection=" + url.QueryEscape(`{"name": 1}`), []string{`"name": "plum"`}, nil},
		{"db/shop/c/items/doc?rev=feature&id=1", []string{`"qty": 9`, "Save to feature", "Who set each field", "more apples"}, nil},
		{"db/shop/c/items/doc?rev=v1&id=1", []string{`"qty": 5`, "Read-only"}, nil},
	}
	for _, p := range pages {
		status, body := b.get(p.path)
		if status != http.StatusOK {
			t.Errorf("%s: status %d\n%s", p.path, status, body)
			continue
		}
		mustContain(t, p.path, body, p.want...)
		mustLack(t, p.path, body, p.absent...)
	}
	// A merge's preview: main's uncommitted change stops it until it is
	// committed.
	if status, body := b.get("db/shop/merge?from=feature"); status != http.StatusConflict || !strings.Contains(body, "DirtyWorkingSet") {
		t.Errorf("the preview of a merge into a dirty branch: status %d\n%s", status, body)
	}
	f.commit("shop", "plums")
	status, body := b.get("db/shop/merge?from=feature")
	if status != http.StatusOK {
		t.Fatalf("merge preview: status %d\n%s", status, body)
	}
	mustContain(t, "merge preview", body, "A three-way merge", first[:8], "No conflicts", "qty", "1 modified")
	// Option, validator and index changes show both sides.
	f.run("shop@feature", bson.D{{Key: "createIndexes", Value: "items"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "qty", Value: 1}}}, {Key: "name", Value: "by_qty"}}}}})
	f.run("shop@feature", bson.D{{Key: "collMod", Value: "items"}, {Key: "validator", Value: bson.D{{Key: "qty", Value: bson.D{{Key: "$gte", Value: 0}}}}}})
	f.commit("shop@feature", "index and validator")
	status, body = b.get("db/shop/diff?from=main&to=feature")
	if status != http.StatusOK {
		t.Fatalf("diff with options: status %d\n%s", status, body)
	}
	mustContain(t, "diff with options", body, "Options changed", `"validator"`, `"$gte": 0`, "Indexes changed", `"name":"by_qty"`)
	if status, body = b.get("db/shop/diff"); status != http.StatusOK || !strings.Contains(body, "No changes") {
		t.Errorf("HEAD against WORKING: status %d\n%s", status, body)
	}
	// Every document link of a collection's page opens its document.
	_, body = b.get("db/shop/c/items?rev=feature")
	links := docLink.FindAllStringSubmatch(body, -1)
	if len(links) != 2 {
		t.Fatalf("feature's items page links %d documents, want 2", len(links))
	}
	for _, l := range links {
		href := strings.TrimPrefix(html.UnescapeString(l[1]), "/console/")
		if status, page := b.get(href); status != http.StatusOK || !strings.Contains(page, "Save to feature") {
			t.Errorf("%s: status %d", href, status)
		}
	}
	// A filtered page leaves out what its filter does not match.
	if _, body := b.get("db/shop/c/items?rev=v1&filter=" + url.QueryEscape(`{"qty": {"$gt": 4}}`)); strings.Contains(body, "pear") {
		t.Error("the filter {qty: {$gt: 4}} showed pear")
	}
}

// TestFilteredHistoryIsOneLine draws a collection's history from a
// branch whose commits change two collections in turn: the commits of
// the other collection are left out, and those listed are joined in one
// lane, each to the next listed, as the history of the collection alone.
func TestFilteredHistoryIsOneLine(t *testing.T) {
	f := startConsole(t, false)
	for i := range 3 {
		f.insert("hist", "a", bson.D{{Key: "_id", Value: i}})
		f.commit("hist", fmt.Sprintf("Alpha %d", i))
		f.insert("hist", "b", bson.D{{Key: "_id", Value: i}})
		f.commit("hist", fmt.Sprintf("Beta %d", i))
	}
	b := f.browser()
	for _, c := range []struct {
		path       string
		want, lack []string
		rows       int
	}{
		{"db/hist/log?collection=a", []string{"Alpha 0", "Alpha 1", "Alpha 2"}, []string{"Beta", "Initialize database"}, 3},
		{"db/hist/log?collection=b&_id=1", []string{"Beta 1"}, []string{"Beta 0", "Beta 2", "Alpha"}, 1},
	} {
		status, body := b.get(c.path)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d\n%s", c.path, status, body)
		}
		mustContain(t, c.path, body, c.want...)
		mustLack(t, c.path, body, c.lack...)
		svgs := graphRow.FindAllStringSubmatch(body, -1)
		if len(svgs) != c.rows {
			t.Fatalf("%s: %d rows drawn, want %d", c.path, len(svgs), c.rows)
		}
		for i, svg := range svgs {
			if svg[1] != "14" {
				t.Errorf("%s: row %d is %s pixels wide, want one lane (14):\n%s", c.path, i, svg[1], svg[0])
			}
			// Each row but the last goes on down to the next.
			if joins := strings.Contains(svg[0], fmt.Sprintf(`y2="%d"`, 30)); joins != (i < len(svgs)-1) {
				t.Errorf("%s: row %d goes on down: %v\n%s", c.path, i, joins, svg[0])
			}
		}
	}
}

// TestDiffOfABranchNotCheckedOut opens the uncommitted changes of a
// branch other than the checked-out one, from the database page's link:
// they are that branch's, not the checked-out branch's.
func TestDiffOfABranchNotCheckedOut(t *testing.T) {
	f := startConsole(t, false)
	f.seedShop() // main, checked out, has plum uncommitted
	f.insert("shop@feature", "items", bson.D{{Key: "_id", Value: 4}, {Key: "name", Value: "kiwi"}})
	if _, err := f.client.Database("shop@feature").Collection("items").UpdateOne(t.Context(), bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: 0}}}}); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	_, body := b.get("db/shop")
	mustContain(t, "database page", body, `href="/console/db/shop/diff?rev=feature">uncommitted changes`, `href="/console/db/shop/diff?rev=main">Uncommitted changes of main`)
	for _, c := range []struct {
		path       string
		want, lack []string
	}{
		{"db/shop/diff?rev=feature", []string{"Uncommitted changes of feature", "kiwi", "1 added", "1 modified", `href="/console/db/shop/c/items/doc?rev=feature&id=2"`, `name="rev" value="feature"`}, []string{"plum"}},
		{"db/shop/diff?rev=feature&from=HEAD&to=WORKING", []string{"Uncommitted changes of feature", "kiwi"}, []string{"plum"}},
		{"db/shop/diff?rev=main", []string{"Uncommitted changes of main", "plum"}, []string{"kiwi"}},
		{"db/shop/diff?rev=feature&from=HEAD~1&to=HEAD", []string{"Diff of shop", "<code>5</code>", "<code>9</code>"}, []string{"kiwi", "plum"}},
		{"db/shop/diff?rev=feature&from=main&to=WORKING", []string{"Diff of shop", "kiwi", "qty"}, []string{"plum"}},
	} {
		status, body := b.get(c.path)
		if status != http.StatusOK {
			t.Errorf("%s: status %d\n%s", c.path, status, body)
			continue
		}
		mustContain(t, c.path, body, c.want...)
		mustLack(t, c.path, body, c.lack...)
	}
}

// TestMergePreviewNamesConflicts previews a merge that would stop on
// conflicts in two collections: each is counted and its documents named,
// the first 100 by _id, each a link to our version, and the rest counted.
func TestMergePreviewNamesConflicts(t *testing.T) {
	f := startConsole(t, false)
	var docs []any
	for id := range 120 {
		docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 0}})
	}
	f.insert("shop", "items", docs...)
	f.insert("shop", "users", bson.D{{Key: "_id", Value: "ann"}, {Key: "n", Value: 0}}, bson.D{{Key: "_id", Value: "bob"}, {Key: "n", Value: 0}})
	f.commit("shop", "base")
	f.run("shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "other"}})
	for side, db := range []string{"shop", "shop@other"} {
		set := bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: side + 1}}}}
		for _, coll := range []string{"items", "users"} {
			if _, err := f.client.Database(db).Collection(coll).UpdateMany(t.Context(), bson.D{}, set); err != nil {
				t.Fatal(err)
			}
		}
		f.commit(db, "side")
	}
	status, body := f.browser().get("db/shop/merge?from=other")
	if status != http.StatusOK {
		t.Fatalf("merge preview: status %d\n%s", status, body)
	}
	mustContain(t, "merge preview", body, "It would stop on conflicts", "items: 120", "and 20 more", "users: 2")
	named := map[string][]string{}
	for _, m := range conflictLink.FindAllStringSubmatch(body, -1) {
		id, err := url.QueryUnescape(m[2])
		if err != nil {
			t.Fatal(err)
		}
		named[m[1]] = append(named[m[1]], id+" "+html.UnescapeString(m[3]))
	}
	if got := named["items"]; len(got) != 100 || got[0] != `{"$numberInt":"0"} 0` || got[99] != `{"$numberInt":"99"} 99` {
		t.Errorf("items: the preview names %d documents, %v, want 0 to 99", len(got), got)
	}
	if got := fmt.Sprint(named["users"]); got != `["ann" "ann" "bob" "bob"]` {
		t.Errorf("users: the preview names %s", got)
	}
	// A link opens our version of the document.
	if m := conflictLink.FindStringSubmatch(body); m != nil {
		href := strings.TrimPrefix(html.UnescapeString(m[0][len(`href="`):strings.Index(m[0], `">`)]), "/console/")
		if status, doc := f.browser().get(href); status != http.StatusOK || !strings.Contains(html.UnescapeString(doc), `"n": 1`) {
			t.Errorf("%s: status %d\n%s", href, status, doc)
		}
	}
}

var conflictLink = regexp.MustCompile(`href="/console/db/shop/c/(\w+)/doc\?rev=main&amp;id=([^"]+)">([^<]+)</a>`)

var graphRow = regexp.MustCompile(`<svg class="graph" width="(\d+)".*?</svg>`)

var docLink = regexp.MustCompile(`href="(/console/db/shop/c/items/doc\?[^"]+)"`)

// TestBadInputIsAnErrorPage sends what a page cannot take: each answer is
// a readable error page with a fitting status, and the server goes on.
func TestBadInputIsAnErrorPage(t *testing.T) {
	f := startConsole(t, false)
	f.seedShop()
	b := f.browser()
	cases := []struct {
		path   string
		status int
		want   string
	}{
		{"db/shop/log?rev=nosuch", http.StatusNotFound, "RevisionNotFound"},
		{"db/nosuchdb/log?rev=main~1", http.StatusNotFound, "does not exist"},
		{"db/shop/diff?from=main&to=nosuch", http.StatusNotFound, "RevisionNotFound"},
		{"db/shop/diff?commit=zzzzzzzzzz", http.StatusNotFound, "RevisionNotFound"},
		{"db/shop/c/items?filter=" + url.QueryEscape("{bad"), http.StatusBadRequest, "the filter is not an Extended JSON document"},
		{"db/shop/c/items?filter=" + url.QueryEscape(`{"$where2": 1}`), http.StatusBadRequest, "unknown top level operator"},
		{"db/shop/c/items?sort=" + url.QueryEscape(`{"a": 7}`), http.StatusBadRequest, "$sort key ordering must be 1"},
		{"db/shop/c/items/doc?id=42", http.StatusNotFound, "no document with _id 42"},
		{"db/shop/c/items/doc", http.StatusBadRequest, "lacks the document's id"},
		{"db/shop/log?_id=1", http.StatusBadRequest, "needs its collection"},
		{"db/shop/merge", http.StatusBadRequest, "?from="},
		{"db/shop/merge?from=nosuch", http.StatusNotFound, "RevisionNotFound"},
		{"db/shop/conflicts?branch=nosuch", http.StatusNotFound, "revision not found: nosuch (RevisionNotFound)"},
		{"db/shop/c/x?rev=nosuch", http.StatusNotFound, "revision not found: nosuch (RevisionNotFound)"},
		{"db/shop/c/items/doc?rev=nosuch&id=1", http.StatusNotFound, "revision not found: nosuch (RevisionNotFound)"},
		{"db/shop/diff?rev=nosuch", http.StatusNotFound, "revision not found: nosuch (RevisionNotFound)"},
		{"db/sh%20op", http.StatusBadRequest, "not a database name"},
		{"db/shop@feature/log", http.StatusBadRequest, "?rev="},
		{"no/such/page", http.StatusNotFound, "no such page"},
	}
	for _, c := range cases {
		status, body := b.get(c.path)
		if status != c.status || !strings.Contains(html.UnescapeString(body), c.want) || !strings.Contains(body, `class="error"`) {
			t.Errorf("%s: status %d, want %d with %q\n%s", c.path, status, c.status, c.want, body)
		}
	}
	// Actions on what does not exist are refused with a page that says so.
	for _, c := range []struct {
		path   string
		form   url.Values
		status int
		want   string
	}{
		{"db/shop/branch/delete", url.Values{"name": {"nosuch"}}, http.StatusNotFound, "branch not found: nosuch (RevisionNotFound)"},
		{"db/shop/branch/delete", url.Values{"name": {"nosuch"}, "force": {"1"}}, http.StatusNotFound, "branch not found: nosuch (RevisionNotFound)"},
		{"db/shop/conflicts/resolve", url.Values{"branch": {"nosuch"}, "collection": {"items"}, "id": {"1"}, "resolution": {"ours"}}, http.StatusNotFound, "revision not found: nosuch (RevisionNotFound)"},
		{"db/shop/commit", url.Values{"branch": {"nosuch"}, "message": {"x"}}, http.StatusNotFound, "revision not found: nosuch (RevisionNotFound)"},
	} {
		status, body := b.post(c.path, c.form, true)
		if status != c.status || !strings.Contains(html.UnescapeString(body), c.want) || !strings.Contains(body, `class="error"`) {
			t.Errorf("POST %s %v: status %d, want %d with %q\n%s", c.path, c.form, status, c.status, c.want, body)
		}
	}
	// Forms without the session's token, or from another site, change
	// nothing.
	if status, _ := b.post("db/shop/branch", url.Values{"name": {"sneaky"}}, false); status != http.StatusForbidden {
		t.Errorf("a form without its token: status %d, want 403", status)
	}
	req, _ := http.NewRequest("POST", f.base+"db/shop/branch", strings.NewReader(url.Values{"name": {"sneaky"}, "csrf": {b.csrf()}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := readBody(t, resp); status != http.StatusForbidden {
		t.Errorf("a form from another origin: status %d, want 403", status)
	}
	if got := f.run("shop", bson.D{{Key: "dumboBranch", Value: 1}})["branches"].(bson.A); len(got) != 2 {
		t.Errorf("refused forms made a branch: %v", got)
	}
	// An edit that changes the _id or is not JSON is refused and shown
	// with the text kept.
	status, body := b.post("db/shop/c/items/doc?rev=main&id=1", url.Values{"document": {`{"_id": 7, "name": "x"}`}}, true)
	if status != http.StatusBadRequest || !strings.Contains(html.UnescapeString(body), `keeps the document's _id`) || !strings.Contains(body, "&#34;_id&#34;: 7") {
		t.Errorf("an edit changing _id: status %d\n%s", status, body)
	}
	if status, body = b.post("db/shop/c/items/doc?rev=v1&id=1", url.Values{"document": {`{"_id": 1}`}}, true); status == http.StatusOK || strings.Contains(body, "Saved") {
		t.Errorf("an edit of a tag: status %d", status)
	}
	f.run("admin", bson.D{{Key: "ping", Value: 1}})
}

// TestFormsChangeTheDatabase drives branches, edits, commits and a
// merge with a conflict through the console's forms.
func TestFormsChangeTheDatabase(t *testing.T) {
	f := startConsole(t, false)
	f.seedShop()
	b := f.browser()
	ok := func(what string, status int, body string) {
		t.Helper()
		if status != http.StatusOK || strings.Contains(body, `class="error"`) {
			t.Fatalf("%s: status %d\n%s", what, status, body)
		}
	}
	status, body := b.post("db/shop/commit", url.Values{"branch": {"main"}, "message": {"add plums"}}, true)
	ok("commit", status, body)
	mustContain(t, "after commit", body, "Committed", "clean")
	status, body = b.post("db/shop/branch", url.Values{"name": {"pricing"}, "from": {"main"}}, true)
	ok("create branch", status, body)
	mustContain(t, "after create", body, "Branch pricing created", "pricing")
	status, body = b.post("db/shop/checkout", url.Values{"branch": {"pricing"}}, true)
	ok("checkout", status, body)
	mustContain(t, "after checkout", body, "pricing</a> <span class=\"badge\">checked out</span>", "Commit pricing")
	status, body = b.post("db/shop/c/items/doc?rev=pricing&id=1", url.Values{"document": {`{"_id": 1, "name": "apple", "qty": 7}`}}, true)
	ok("edit", status, body)
	mustContain(t, "after edit", body, "Saved the document", `"qty": 7`)
	status, body = b.post("db/shop/commit", url.Values{"branch": {"pricing"}, "message": {"seven apples"}}, true)
	ok("commit pricing", status, body)
	// feature set qty to 9, pricing to 7: merging feature conflicts.
	status, body = b.post("db/shop/merge", url.Values{"from": {"feature"}, "into": {"pricing"}}, true)
	ok("merge", status, body)
	mustContain(t, "after merge", body, "stopped on conflicts", "Keep ours", "Take theirs", `"qty": 9`)
	status, body = b.post("db/shop/conflicts/resolve", url.Values{"branch": {"pricing"}, "collection": {"items"}, "id": {`{"$numberInt":"1"}`},
		"resolution": {"custom"}, "document": {`{"_id": 1, "name": "apple", "qty": 8}`}}, true)
	ok("resolve", status, body)
	mustContain(t, "after resolve", body, "Settled the conflict", "0 left")
	status, body = b.post("db/shop/merge/continue", url.Values{"branch": {"pricing"}}, true)
	ok("continue", status, body)
	mustContain(t, "after continue", body, "Merged into pricing", "Merge feature into pricing")
	var doc bson.M
	if err := f.client.Database("shop@pricing").Collection("items").FindOne(t.Context(), bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["qty"] != int32(8) {
		t.Errorf("after the merge, apple is %v (%v), want qty 8", doc, err)
	}
	status, body = b.post("db/shop/branch/delete", url.Values{"name": {"feature"}}, true)
	ok("delete", status, body)
	mustContain(t, "after delete", body, "Branch feature deleted")

	// A merge stopped on a conflict can be aborted.
	if _, err := f.client.Database("shop").Collection("items").UpdateOne(t.Context(), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	f.commit("shop", "one apple")
	status, body = b.post("db/shop/merge", url.Values{"from": {"pricing"}, "into": {"main"}}, true)
	ok("second merge", status, body)
	mustContain(t, "second merge", body, "1 left")
	status, body = b.post("db/shop/merge/abort", url.Values{"branch": {"main"}}, true)
	ok("abort", status, body)
	mustContain(t, "after abort", body, "Aborted the merge into main")
	if st := f.run("shop", bson.D{{Key: "dumboStatus", Value: 1}}); st["merge"] != nil || st["dirty"] != false {
		t.Errorf("after the abort, main is %v", st)
	}
	// Forms that lack a field, or settle a conflict with bad JSON, are
	// refused with a page that says so.
	for _, c := range []struct {
		path string
		form url.Values
		want string
	}{
		{"db/shop/branch", url.Values{}, "the form lacks name"},
		{"db/shop/commit", url.Values{"branch": {"main"}}, "the form lacks message"},
		{"db/shop/merge", url.Values{"from": {"pricing"}}, "the form lacks into"},
		{"db/shop/checkout", url.Values{"branch": {"nosuch"}}, "no branch nosuch"},
		{"db/shop/conflicts/resolve", url.Values{"branch": {"main"}, "collection": {"items"}, "id": {"1"}, "resolution": {"custom"}, "document": {"{oops"}}, "not an Extended JSON document"},
		{"db/shop/merge/continue", url.Values{"branch": {"main"}}, "NoMergeInProgress"},
	} {
		status, body := b.post(c.path, c.form, true)
		if status < 400 || !strings.Contains(html.UnescapeString(body), c.want) {
			t.Errorf("%s %v: status %d, want an error with %q\n%s", c.path, c.form, status, c.want, body)
		}
	}
	if status, css := b.get("static/console.css"); status != http.StatusOK || !strings.Contains(css, ":focus-visible") {
		t.Errorf("the style sheet: status %d", status)
	}
}

package console_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestConsoleUnderAuth checks the console as the server's users: a login
// page first, pages as each user may see them, and the server's refusals
// (roles, protected branches) shown as error pages.
func TestConsoleUnderAuth(t *testing.T) {
	f := startConsole(t, true)
	f.seedShop()
	f.commit("shop", "plums")
	for _, u := range []struct {
		name  string
		roles bson.A
	}{
		{"reader", bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "shop"}}}},
		{"writer", bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "shop"}}}},
		{"chief", bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}},
		{"outsider", bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "elsewhere"}}}},
	} {
		f.run("admin", bson.D{{Key: "createUser", Value: u.name}, {Key: "pwd", Value: u.name + "-pw"}, {Key: "roles", Value: u.roles}})
	}
	f.run("shop", bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}})

	anon := f.browser()
	resp, err := anon.http.Get(f.base + "db/shop/log")
	if err != nil {
		t.Fatal(err)
	}
	status, body := readBody(t, resp)
	if status != http.StatusOK || resp.Request.URL.Path != "/console/login" || !strings.Contains(body, `name="password"`) {
		t.Fatalf("a page without a login: status %d at %s, want the login page", status, resp.Request.URL)
	}
	if status, body := anon.post("login", url.Values{"user": {"reader"}, "password": {"wrong"}}, false); status != http.StatusUnauthorized || !strings.Contains(body, "Authentication failed.") {
		t.Errorf("a wrong password: status %d", status)
	}
	if status, _ := anon.post("db/shop/commit", url.Values{"branch": {"main"}, "message": {"x"}, "csrf": {"guess"}}, false); status != http.StatusForbidden {
		t.Errorf("a form without a session: status %d, want 403", status)
	}

	reader := f.login("reader")
	if status, body := reader.get(""); status != http.StatusOK || !strings.Contains(body, `href="/console/db/shop"`) {
		t.Errorf("reader's databases page: status %d\n%s", status, body)
	}
	status, body = reader.get("db/shop")
	if status != http.StatusOK {
		t.Fatalf("reader's database page: %d\n%s", status, body)
	}
	mustContain(t, "reader's database page", body, "feature", "more apples")
	for _, form := range []string{"Create branch", "Commit main", "Delete"} {
		if strings.Contains(body, form) {
			t.Errorf("a read-only user is offered %q", form)
		}
	}
	if _, body = reader.get("db/shop/c/items/doc?id=1"); !strings.Contains(body, "Read-only") || strings.Contains(body, "<textarea") {
		t.Error("a read-only user is offered an edit")
	}
	// The server, not the page, decides: a reader's post is refused.
	if status, body = reader.post("db/shop/branch", url.Values{"name": {"mine"}}, true); status != http.StatusForbidden || !strings.Contains(body, "Unauthorized") {
		t.Errorf("a reader's new branch: status %d\n%s", status, body)
	}

	// A user who may not read shop gets an error page for each of its
	// pages, and does not see it among the databases.
	outsider := f.browser()
	if status, body := outsider.post("login", url.Values{"user": {"outsider"}, "password": {"outsider-pw"}, "next": {"/console/"}}, false); status != http.StatusOK || !strings.Contains(body, ">outsider<") || strings.Contains(body, `href="/console/db/shop"`) {
		t.Errorf("outsider's databases page: status %d, want it without shop\n%s", status, body)
	}
	for _, path := range []string{"db/shop", "db/shop/log", "db/shop/diff", "db/shop/c/items", "db/shop/c/items/doc?id=1", "db/shop/conflicts", "db/shop/merge?from=feature"} {
		status, body := outsider.get(path)
		if status != http.StatusForbidden || !strings.Contains(body, `class="error"`) || !strings.Contains(body, "(Unauthorized)") {
			t.Errorf("outsider's %s: status %d, want 403 with Unauthorized\n%s", path, status, body)
		}
	}

	writer := f.login("writer")
	if _, body = writer.get("db/shop"); !strings.Contains(body, "Create branch") {
		t.Error("a writer is not offered a new branch")
	}
	// main is protected: the writer is offered no commit, edit, merge or
	// deletion there, but told why, and is offered them on feature.
	const lockedNote = "main is protected: only holders of root (admin) may write it"
	for _, c := range []struct {
		path string
		lack []string
	}{
		{"db/shop", []string{`action="/console/db/shop/commit"`, "Merge into main"}},
		{"db/shop/c/items/doc?rev=main&id=1", []string{"<textarea", "Save to main"}},
	} {
		status, body := writer.get(c.path)
		if status != http.StatusOK {
			t.Errorf("writer's %s: status %d\n%s", c.path, status, body)
			continue
		}
		mustContain(t, "writer's "+c.path, body, lockedNote)
		mustLack(t, "writer's "+c.path, body, c.lack...)
	}
	// Even a merge's preview counts as a write of main, and the server
	// refuses it.
	if status, body := writer.get("db/shop/merge?from=feature"); status != http.StatusForbidden || !strings.Contains(body, "branch main of shop is protected") {
		t.Errorf("writer's preview of a merge into main: status %d\n%s", status, body)
	}
	_, body = writer.get("db/shop")
	mustContain(t, "writer's database page", body, "protected: read-only for you")
	if strings.Count(body, `action="/console/db/shop/branch/delete"`) != 1 {
		t.Error("a writer is offered to delete protected main, or not feature")
	}
	writer.post("db/shop/checkout", url.Values{"branch": {"feature"}}, true)
	_, body = writer.get("db/shop")
	mustContain(t, "writer's database page on feature", body, `action="/console/db/shop/commit"`, "Merge into feature")
	mustLack(t, "writer's database page on feature", body, lockedNote)
	if _, body = writer.get("db/shop/c/items/doc?rev=feature&id=1"); !strings.Contains(body, "Save to feature") {
		t.Error("a writer is not offered an edit of feature")
	}
	// A holder of main's role is offered all, main marked protected.
	chief := f.login("chief")
	_, body = chief.get("db/shop")
	mustContain(t, "chief's database page", body, `action="/console/db/shop/commit"`, ">protected</span>")
	mustLack(t, "chief's database page", body, lockedNote, "read-only for you")
	if _, body = chief.get("db/shop/merge?from=feature"); !strings.Contains(body, `action="/console/db/shop/merge"`) {
		t.Error("a holder of main's role is not offered the merge")
	}
	// The chief's merge into main stops on a conflict: the writer sees it
	// but is offered no way to settle it.
	if _, err := f.client.Database("shop").Collection("items").UpdateOne(t.Context(), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: 7}}}}); err != nil {
		t.Fatal(err)
	}
	f.commit("shop", "seven apples")
	if _, body = chief.post("db/shop/merge", url.Values{"from": {"feature"}, "into": {"main"}}, true); !strings.Contains(body, "Keep ours") {
		t.Fatalf("the chief's merge did not stop on its conflict:\n%s", body)
	}
	_, body = writer.get("db/shop/conflicts?branch=main")
	mustContain(t, "writer's conflicts page", body, "1 left", lockedNote)
	mustLack(t, "writer's conflicts page", body, "Keep ours", "Use the edited document", "Abort the merge")
	// main is protected: the writer's edit there is refused, on a branch
	// of the writer's own it goes through.
	status, body = writer.post("db/shop/c/items/doc?rev=main&id=2", url.Values{"document": {`{"_id": 2, "name": "pear", "qty": 0}`}}, true)
	if status != http.StatusForbidden || !strings.Contains(html.UnescapeString(body), "Unauthorized") {
		t.Errorf("a writer's edit of protected main: status %d\n%s", status, body)
	}
	if status, body = writer.post("db/shop/c/items/doc?rev=feature&id=2", url.Values{"document": {`{"_id": 2, "name": "pear", "qty": 0}`}}, true); status != http.StatusOK {
		t.Errorf("a writer's edit of feature: status %d\n%s", status, body)
	}
	// Logging out ends the session.
	writer.post("logout", url.Values{}, true)
	if resp, err := writer.http.Get(f.base + "db/shop"); err != nil || resp.Request.URL.Path != "/console/login" {
		t.Errorf("after logging out: %v, %v", resp.Request.URL, err)
	}
}

// login logs a new browser in as user (password user-pw).
func (f *fixture) login(user string) *browser {
	f.t.Helper()
	b := f.browser()
	status, body := b.post("login", url.Values{"user": {user}, "password": {user + "-pw"}, "next": {"/console/db/shop"}}, false)
	if status != http.StatusOK || !strings.Contains(body, ">"+user+"<") {
		f.t.Fatalf("login as %s: status %d\n%s", user, status, body)
	}
	return b
}

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

	writer := f.login("writer")
	if _, body = writer.get("db/shop"); !strings.Contains(body, "Create branch") {
		t.Error("a writer is not offered a new branch")
	}
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

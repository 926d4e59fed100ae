package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// chromiumPath finds the headless browser that `make test` installs
// (Debian's chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DUMBODB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skip("chromium not installed (run `make test`, which installs it)")
	}
	t.Fatal("chromium not found: run `make test` (it installs Debian's chromium) or set DUMBODB_CHROMIUM")
	return ""
}

// page is a browser tab on the console, for a scripted session.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
	// shots: where screenshots go: the test's artifacts (kept by go
	// test -artifacts, as make test runs it), and with
	// DUMBODB_CONSOLE_SCREENSHOTS also there, to refresh the copies
	// docs/console keeps (docs/console.md#screenshots).
	shots []string
}

func openBrowser(t *testing.T, base string) *page {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		// The machine's network is closed: no background requests.
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1100, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	p := &page{t: t, ctx: ctx, base: base, shots: []string{t.ArtifactDir()}}
	t.Logf("screenshots in %s", t.ArtifactDir())
	if dir := os.Getenv("DUMBODB_CONSOLE_SCREENSHOTS"); dir != "" {
		p.shots = append(p.shots, dir)
	}
	return p
}

func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// get runs an action that answers a value.
func get[T any](p *page, what string, action chromedp.Action[T]) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, action)
	if err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// text is what the page's main part shows, once a page is there (read
// again while a navigation replaces the page under the read).
func (p *page) text() string {
	p.t.Helper()
	for try := 0; ; try++ {
		body, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS("main")))
		if err == nil {
			return body
		}
		if try == 50 {
			p.t.Fatalf("read the page: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// open goes to a console page and waits for its heading.
func (p *page) open(path string) {
	p.t.Helper()
	p.do("open "+path, chromedp.Navigate(p.base+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
}

// click clicks what sel finds and waits until the next page shows text.
func (p *page) click(sel, text string) {
	p.t.Helper()
	p.navigate("click "+sel, chromedp.Click(chromedp.CSS(sel)), text)
}

// navigate runs an action that leaves the page (a click, a key on a
// button), waits for the next page to replace it, and until that page
// shows text: text the old page showed too must not end the wait early.
func (p *page) navigate(what string, action chromedp.Action[chromedp.Void], text string) {
	p.t.Helper()
	get(p, "mark the page", chromedp.Evaluate[bool](`window.dumboOldPage = true`))
	p.do(what, action)
	deadline := time.Now().Add(time.Minute)
	for {
		old, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`window.dumboOldPage === true`))
		if err == nil && !old {
			break
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: the page was never replaced", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.waitFor(text)
}

// waitFor waits until the page's main part shows text.
func (p *page) waitFor(text string) {
	p.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		body := p.text()
		if strings.Contains(body, text) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the page never showed %q; it shows:\n%s", text, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fill types into a form field.
func (p *page) fill(sel, value string) {
	p.t.Helper()
	p.do("fill "+sel, chromedp.SetValue(chromedp.CSS(sel), value))
}

// shows fails unless the page's main part shows every text.
func (p *page) shows(texts ...string) {
	p.t.Helper()
	body := p.text()
	for _, s := range texts {
		if !strings.Contains(body, s) {
			p.t.Errorf("the page lacks %q; it shows:\n%s", s, body)
		}
	}
}

func (p *page) screenshot(name string) {
	p.t.Helper()
	img := get(p, "screenshot", chromedp.FullScreenshot(100))
	for _, dir := range p.shots {
		if err := os.WriteFile(filepath.Join(dir, name+".png"), img, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
}

// TestConsoleInABrowser is a scripted session in headless Chromium: data
// committed, a branch made and checked out, a document edited on it,
// the branches merged with a conflict settled through the pages, and
// what each page shows along the way.
func TestConsoleInABrowser(t *testing.T) {
	f := startConsole(t, false)
	f.insert("shop", "items", bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "apple"}, {Key: "qty", Value: 5}},
		bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "pear"}, {Key: "qty", Value: 3}},
		bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "plum"}, {Key: "qty", Value: 8}})
	p := openBrowser(t, f.base)

	p.open("")
	p.shows("shop", "Size on disk")
	p.screenshot("databases")
	p.click(`a[href="/console/db/shop"]`, "Branches")
	p.fill(`form[action$="/commit"] input[name=message]`, "stock the shelves")
	p.click(`form[action$="/commit"] button`, "Committed")
	p.fill(`form[action$="/branch"] input[name=name]`, "pricing")
	p.click(`form[action$="/branch"] button`, "Branch pricing created")
	p.click(`tr:has(input[value=pricing]) form[action$="/checkout"] button`, "Checked out pricing")
	p.shows("Collections at pricing")

	p.click(`ul.cols a`, "Page 1")
	p.fill(`input[name=filter]`, `{"name": "apple"}`)
	p.click(`form.query button`, "apple")
	p.shows("History of items")
	if docs := get(p, "count documents", chromedp.Evaluate[int](`document.querySelectorAll("div.doc").length`)); docs != 1 {
		t.Errorf("the filter {name: apple} shows %d documents", docs)
	}
	p.screenshot("collection")
	p.click(`div.doc a`, "Save to pricing")
	p.fill(`textarea[name=document]`, `{"_id": 1, "name": "apple", "qty": 7, "price": 1.25}`)
	p.click(`form.stack button`, "Saved the document")
	if edited := get(p, "read the edit box", chromedp.Evaluate[string](`document.querySelector("textarea").value`)); !strings.Contains(edited, `"price": 1.25`) {
		t.Errorf("after saving, the edit box holds %s", edited)
	}
	p.screenshot("document")

	p.open("db/shop")
	p.fill(`form[action$="/commit"] input[name=message]`, "price apples")
	p.click(`form[action$="/commit"] button`, "Committed")
	// Meanwhile main sets another quantity for apples.
	if _, err := f.client.Database("shop").Collection("items").UpdateOne(t.Context(), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: 9}}}}); err != nil {
		t.Fatal(err)
	}
	f.commit("shop", "restock apples")
	p.open("db/shop")
	p.shows("1 / 1") // pricing: one commit ahead of main, one behind
	p.screenshot("database")
	p.click(`tr:has(input[value=main]) form[action$="/checkout"] button`, "Checked out main")

	p.click(`tr:has(input[value=pricing]) a.button`, "What it brings")
	p.shows("A three-way merge", "items: 1", "qty", "price")
	p.screenshot("merge")
	p.click(`form[action$="/merge"] button`, "1 left")
	p.shows("Ours (main)", `"qty": 9`, `"qty": 7`)
	p.screenshot("conflicts")
	// Settled from the keyboard: focus the button, press Enter.
	p.do("focus take theirs", chromedp.Focus(chromedp.CSS(`button[value=theirs]`)))
	p.navigate("take theirs by keyboard", chromedp.KeyEvent("\r"), "0 left")
	p.click(`form[action$="/merge/continue"] button`, "Merged into main")
	p.shows("Merge pricing into main", "restock apples", "price apples", "stock the shelves")
	p.screenshot("log")

	p.click(`table.log tbody tr:first-child a.mono`, "parent")
	p.shows("Merge pricing into main", "price", "1.25")
	p.screenshot("diff")

	var doc bson.M
	if err := f.client.Database("shop").Collection("items").FindOne(t.Context(), bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["qty"] != int32(7) || doc["price"] != 1.25 {
		t.Errorf("after the merge, apple is %v (%v), want pricing's", doc, err)
	}

	// A branch whose merge would stop on a conflict, for a preview that
	// names it.
	f.run("shop", bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "late"}})
	for qty, db := range []string{"shop", "shop@late"} {
		if _, err := f.client.Database(db).Collection("items").UpdateOne(t.Context(), bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: qty}}}}); err != nil {
			t.Fatal(err)
		}
		f.commit(db, "pears on "+db)
	}
	pages := []string{"", "db/shop", "db/shop/log", "db/shop/diff?commit=main", "db/shop/c/items",
		"db/shop/c/items/doc?id=1", "db/shop/merge?from=late"}
	// From the keyboard: the skip link comes first, shows when focused,
	// and Tab reaches every control of each page.
	for _, path := range pages {
		p.open(path)
		p.tabThrough(path)
	}
	// In a narrow window nothing but the tables' and code's own scroll
	// areas is wider than the window.
	p.do("narrow window", chromedp.EmulateViewport(380, 800))
	for _, path := range pages {
		p.open(path)
		if get(p, "look for an error", chromedp.Evaluate[bool](`document.querySelector(".error") !== null`)) {
			t.Errorf("%s: an error page: %s", path, p.text())
		}
		if w := get(p, "measure", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 380 {
			t.Errorf("%s is %d pixels wide in a 380-pixel window: it scrolls sideways", path, w)
		}
	}
	p.open("db/shop/log")
	p.screenshot("log-narrow")
}

// focusables lists the controls of a page that Tab should reach, in
// document order, as window.dumboControls, and answers how many.
const focusables = `(window.dumboControls = [...document.querySelectorAll(
	'a[href], button:not([disabled]), input:not([type=hidden]):not([disabled]), textarea:not([disabled]), select:not([disabled])')]).length`

// tabThrough presses Tab from the top of the page until focus leaves it
// or comes round again, and checks that the skip link came first and
// showed, and that every control was reached.
func (p *page) tabThrough(path string) {
	p.t.Helper()
	n := get(p, "list the controls", chromedp.Evaluate[int](focusables))
	p.do("start at the top", chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
	reached := map[int]bool{}
	for press := 0; press < n+20; press++ {
		p.do("press Tab", chromedp.KeyEvent("\t"))
		at := get(p, "see what has focus", chromedp.Evaluate[int](`document.activeElement === document.body || document.activeElement === null ? -2 : window.dumboControls.indexOf(document.activeElement)`))
		if press == 0 {
			skip := get(p, "look at the first stop", chromedp.Evaluate[bool](`document.activeElement.matches("a.skip[href='#main']") && document.activeElement.getBoundingClientRect().left >= 0`))
			if !skip {
				p.t.Errorf("%s: the first Tab stop is not the skip link, shown: %s", path, get(p, "describe it", chromedp.Evaluate[string](`document.activeElement.outerHTML`)))
			}
		}
		if at == -2 || (press > 0 && at == 0) {
			break // out of the page, or round to the skip link again
		}
		if at >= 0 {
			reached[at] = true
		}
	}
	if len(reached) != n {
		missed := get(p, "name the missed", chromedp.Evaluate[[]string](`window.dumboControls.filter((c, i) => !`+jsSet(reached)+`.has(i)).map((c) => c.outerHTML.slice(0, 120))`))
		p.t.Errorf("%s: Tab reaches %d of %d controls; not: %v", path, len(reached), n, missed)
	}
}

// jsSet writes a set of indexes as a JavaScript Set.
func jsSet(m map[int]bool) string {
	var b strings.Builder
	b.WriteString("new Set([")
	for i := range m {
		fmt.Fprintf(&b, "%d,", i)
	}
	b.WriteString("])")
	return b.String()
}

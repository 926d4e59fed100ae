package lint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/internal/logschema"
)

// root is the repository's top directory.
const root = "../.."

// maxFileLines bounds a non-test Go file: past it a file holds more than
// one thing and is split by topic.
const maxFileLines = 700

// maxReadmeLines bounds the README, which sends detail to docs/.
const maxReadmeLines = 350

// skipped are the directories the checks leave alone: vendored code and
// the tools' caches.
var skipped = map[string]bool{"third_party": true, ".tools": true, ".git": true, "node_modules": true, "data": true}

// walk calls fn for every file of the repository with one of exts.
func walk(t *testing.T, fn func(path string, body []byte), exts ...string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipped[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(path, ext) {
				body, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				fn(strings.TrimPrefix(path, root+"/"), body)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isTest(path string) bool { return strings.HasSuffix(path, "_test.go") }

// generated marks a file written by a tool (go generate), which no one
// reads as a whole.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func TestNoLongFiles(t *testing.T) {
	walk(t, func(path string, body []byte) {
		if isTest(path) || generated.Match(body) {
			return
		}
		if n := bytes.Count(body, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines: split it by topic (at most %d)", path, n, maxFileLines)
		}
	}, ".go")
}

func TestReadmeIsShort(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(body, []byte("\n")); n >= maxReadmeLines {
		t.Errorf("README.md has %d lines: move detail into docs/ (under %d)", n, maxReadmeLines)
	}
}

// numericCode finds an error code given by number outside the table of
// codes (package mongoerr): codes are named there once, and used by name.
var numericCode = regexp.MustCompile(`mongoerr\.(?:New|Code|Wrap)\(\s*[0-9]|mongoerr\.Code\([0-9]|Append(?:Int32|Int64|Double)\("code",\s*[0-9]`)

func TestErrorCodesByName(t *testing.T) {
	walk(t, func(path string, body []byte) {
		if isTest(path) || strings.HasPrefix(path, "mongoerr/") {
			return
		}
		eachLine(body, func(n int, line string) {
			if numericCode.MatchString(line) {
				t.Errorf("%s:%d: an error code by number; name it in mongoerr: %s", path, n, strings.TrimSpace(line))
			}
		})
	}, ".go")
}

// workHistory finds words about how the code was made rather than what it
// does: issue numbers and work sessions mean nothing to a reader of the
// product. (A logical session, MongoDB's lsid, is product vocabulary.)
var workHistory = regexp.MustCompile(`(?i)\bissues? #?[0-9]+|\bissue's\b|\b(?:first|second|third|fourth|fifth|[a-z]+th|previous|earlier|last|this|a later|an earlier) (?:work )?session(?:'s)? (?:found|measured|added|wrote|fixed|left|report)`)

func TestDocsSpeakOfTheProduct(t *testing.T) {
	walk(t, func(path string, body []byte) {
		eachLine(body, func(n int, line string) {
			if strings.HasSuffix(path, ".go") && !isComment(line) {
				return
			}
			if m := workHistory.FindString(line); m != "" {
				t.Errorf("%s:%d: %q speaks of how the work was done, not of the product", path, n, m)
			}
		})
	}, ".go", ".md")
}

// isComment reports a Go line that is, or ends in, a comment.
func isComment(line string) bool { return strings.Contains(line, "//") }

func eachLine(body []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fn(n, sc.Text())
	}
}

// TestPackagesSayWhatTheyOwn: every package with non-test code opens with
// a doc comment saying what it owns.
func TestPackagesSayWhatTheyOwn(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Doc,GoFiles", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Doc string
			GoFiles         []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if len(p.GoFiles) > 0 && p.Doc == "" {
			t.Errorf("package %s has no doc comment (// Package … in one of its files)", p.ImportPath)
		}
	}
}

// logComponent is a log line's component as the code names it.
var logComponent = regexp.MustCompile(`Str\("c", "([^"]*)"\)`)

// TestLogComponentsAreMongods: every component a log line names in the
// code is one of mongod's, so that lines no test writes still parse for
// tools made for mongod's logs.
func TestLogComponentsAreMongods(t *testing.T) {
	walk(t, func(path string, body []byte) {
		if isTest(path) {
			return
		}
		for _, m := range logComponent.FindAllSubmatch(body, -1) {
			if !logschema.IsComponent(string(m[1])) {
				t.Errorf("%s: log component %q is not one of mongod's", path, m[1])
			}
		}
	}, ".go")
}

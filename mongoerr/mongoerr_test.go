package mongoerr

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// DumboDB's own codes, for version control, are outside mongod's list.
const ownCodesFirst, ownCodesLast = 20000, 20099

// namedByMongodOnly are codes mongod's list names that DumboDB reports as
// Location<code>, with mongod's name: a code gaining a name on the wire
// is a decision to make here, not a side effect of adding a constant.
var namedByMongodOnly = map[Code]string{
	Location13113: "MergeStageNoMatchingDocument",
	Location13297: "DatabaseDifferCase",
	Location17280: "OBSOLETE_KeyTooLong", // mongod no longer raises it
	Location40414: "IDLFailedToParse",
	Location40415: "IDLUnknownField",
	Location50768: "NotARetryableWriteCommand",
}

// TestNamesAreMongods checks every code declared here against mongod's
// own list (testdata/error_codes.txt): a named code has mongod's name for
// its number, and a Location<code> is named after its own number.
func TestNamesAreMongods(t *testing.T) {
	mongod := readMongodCodes(t)
	for c, name := range declaredCodes(t) {
		switch {
		case strings.HasPrefix(name, "Location"):
			if name != "Location"+strconv.Itoa(int(c)) {
				t.Errorf("%s is %d", name, c)
			}
			if theirs, named := mongod[c]; named && namedByMongodOnly[c] != theirs {
				t.Errorf("%s: mongod names %d %s", name, c, theirs)
			}
		case c >= ownCodesFirst && c <= ownCodesLast:
			if _, taken := mongod[c]; taken {
				t.Errorf("%s (%d): mongod has that number", name, c)
			}
		case mongod[c] != name:
			t.Errorf("%s is %d, which mongod names %q", name, c, mongod[c])
		}
	}
	for c, theirs := range namedByMongodOnly {
		if mongod[c] != theirs {
			t.Errorf("namedByMongodOnly: mongod names %d %q, not %q", c, mongod[c], theirs)
		}
	}
}

// TestCodeLookupsAreInverse: Name and CodeNamed undo each other for every
// code declared here, and a code with no constant is Location<code>.
func TestCodeLookupsAreInverse(t *testing.T) {
	for c := range declaredCodes(t) {
		if back, ok := CodeNamed(c.Name()); !ok || back != c {
			t.Errorf("CodeNamed(%q) = %d, %v; want %d", c.Name(), back, ok, c)
		}
	}
	for name, c := range codesByName {
		if c.Name() != name {
			t.Errorf("code %d is named %q, want %q", c, c.Name(), name)
		}
	}
	if got := Code(123456789).Name(); got != "Location123456789" {
		t.Errorf("an undeclared code is named %q", got)
	}
	if c, ok := CodeNamed("NoSuchCodeName"); ok {
		t.Errorf("CodeNamed of an unknown name: %d", c)
	}
}

// TestCodeStringUpToDate fails when code_string.go is older than the
// constants: each constant, and no other name, must be in it with its
// number (run `go generate ./mongoerr`).
func TestCodeStringUpToDate(t *testing.T) {
	declared := declaredCodes(t)
	if len(declared) != len(_Code_map) {
		t.Errorf("%d constants, %d names in code_string.go", len(declared), len(_Code_map))
	}
	for c, name := range declared {
		if _Code_map[c] != name {
			t.Errorf("%s (%d) is %q in code_string.go", name, c, _Code_map[c])
		}
	}
}

// declaredCodes reads the package's source for its constants of type
// Code, by number, failing on a number declared twice.
func declaredCodes(t *testing.T) map[Code]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	codes := map[Code]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "code_string.go" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range codeSpecs(f) {
			lit, ok := spec.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.INT {
				t.Fatalf("%s: the value is not a number", spec.Names[0].Name)
			}
			n, _ := strconv.Atoi(lit.Value)
			if other, dup := codes[Code(n)]; dup {
				t.Errorf("%s and %s are both %d", other, spec.Names[0].Name, n)
			}
			codes[Code(n)] = spec.Names[0].Name
		}
	}
	return codes
}

// codeSpecs are a file's constant declarations of type Code.
func codeSpecs(f *ast.File) []*ast.ValueSpec {
	var specs []*ast.ValueSpec
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, s := range gen.Specs {
			spec := s.(*ast.ValueSpec)
			if typ, ok := spec.Type.(*ast.Ident); ok && typ.Name == "Code" {
				specs = append(specs, spec)
			}
		}
	}
	return specs
}

// readMongodCodes reads testdata/error_codes.txt: mongod's codes by number.
func readMongodCodes(t *testing.T) map[Code]string {
	t.Helper()
	f, err := os.Open("testdata/error_codes.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	codes := map[Code]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		num, name, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			t.Fatalf("testdata/error_codes.txt: %q", line)
		}
		codes[Code(n)] = name
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return codes
}

package text

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The data-driven tests live in testdata/*: a command line, input lines,
// "----", and the expected output up to a blank line.
//
//	terms <language> [case] [diacritics]   input: one text per line;
//	                                       output: its terms, space separated
//	language <name>                        output: the long name, or unsupported
//
// Run with -rewrite to regenerate expected outputs after reviewing a change.
var rewrite = flag.Bool("rewrite", false, "rewrite expected outputs in testdata")

func TestDataDriven(t *testing.T) {
	files, _ := filepath.Glob("testdata/*")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runFile(t, file) })
	}
}

func runFile(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		cmd := l
		var input []string
		for sc.Scan() && sc.Text() != "----" {
			input = append(input, sc.Text())
		}
		var expected []string
		for sc.Scan() && sc.Text() != "" {
			expected = append(expected, sc.Text())
		}
		got := runCase(t, cmd, input)
		out.WriteString(cmd + "\n")
		for _, in := range input {
			out.WriteString(in + "\n")
		}
		out.WriteString("----\n" + strings.Join(got, "\n") + "\n\n")
		if !*rewrite && strings.Join(got, "\n") != strings.Join(expected, "\n") {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", file, cmd, strings.Join(got, "\n"), strings.Join(expected, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runCase(t *testing.T, cmd string, input []string) []string {
	args := strings.Fields(cmd)
	switch args[0] {
	case "language":
		if l, ok := LookupLanguage(args[1]); ok {
			return []string{l.Name}
		}
		return []string{"unsupported"}
	case "terms":
		l, ok := LookupLanguage(args[1])
		if !ok {
			t.Fatalf("%s: unknown language", cmd)
		}
		var sens Sensitivity
		for _, a := range args[2:] {
			sens.Case = sens.Case || a == "case"
			sens.Diacritics = sens.Diacritics || a == "diacritics"
		}
		var out []string
		for _, in := range input {
			out = append(out, strings.Join(l.Terms(Tokenize(in), sens), " "))
		}
		return out
	}
	t.Fatalf("unknown command %q", cmd)
	return nil
}

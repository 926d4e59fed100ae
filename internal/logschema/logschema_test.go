package logschema

import (
	"fmt"
	"strings"
	"testing"
)

// good is a line as mongod writes it; the cases below break it one way at
// a time, so that each shows the checker catches that one thing.
const good = `{"t":{"$date":"2026-12-06T04:00:00.000+00:00"},"s":"I","c":"NETWORK","id":22943,"ctx":"listener","msg":"Connection accepted","attr":{"remote":"127.0.0.1:50550","connectionId":12}}`

const slow = `{"t":{"$date":"2026-12-06T04:00:00.123+00:00"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn7","msg":"Slow query",` +
	`"attr":{"type":"command","ns":"test.c","command":{"find":"c","filter":{}},"durationMillis":120,"remote":"127.0.0.1:1"}}`

func TestCheckLine(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       string // a part of the error; "" for a good line
	}{
		{"connection accepted", good, ""},
		{"slow query", slow, ""},
		{"newline left on", good + "\n", ""},
		{"no attr", `{"t":{"$date":"2026-12-06T04:00:00.000+00:00"},"s":"W","c":"STORAGE","id":90000001,"ctx":"checkpointer","msg":"m"}`, ""},
		{"svc, tags, truncated and size", `{"t":{"$date":"2026-12-06T04:00:00.000-05:30"},"s":"D5","c":"-","id":1,"ctx":"conn1","svc":"S","msg":"m","attr":{},"tags":["startupWarnings"],"truncated":{"command":{}},"size":{"command":20000}}`, ""},
		{"durationMillis deep down", strings.Replace(good, `"connectionId":12`, `"op":{"stats":[{"durationMillis":3}]}`, 1), ""},

		{"not JSON", `{"t":`, "not valid JSON"},
		{"empty", "", "not valid JSON"},
		{"an array", `[1]`, "not a JSON object"},
		{"text after the object", good + ` {}`, "not valid JSON"},
		{"t a string", strings.Replace(good, `{"$date":"2026-12-06T04:00:00.000+00:00"}`, `"2026-12-06T04:00:00.000Z"`, 1), "t:"},
		{"t in Z", strings.Replace(good, `+00:00`, `Z`, 1), "numeric offset"},
		{"t without milliseconds", strings.Replace(good, `00.000+00:00`, `00+00:00`, 1), "milliseconds"},
		{"t with nanoseconds", strings.Replace(good, `00.000+00:00`, `00.000000001+00:00`, 1), "milliseconds"},
		{"t not a date", strings.Replace(good, `2026-12-06`, `2026-13-06`, 1), "month out of range"},
		{"t with another key", strings.Replace(good, `+00:00"}`, `+00:00","x":1}`, 1), "t:"},
		{"s unknown", strings.Replace(good, `"s":"I"`, `"s":"info"`, 1), "s:"},
		{"s D6", strings.Replace(good, `"s":"I"`, `"s":"D6"`, 1), "s:"},
		{"c not mongod's", strings.Replace(good, `"NETWORK"`, `"WAL"`, 1), "not one of mongod's components"},
		{"c empty", strings.Replace(good, `"NETWORK"`, `""`, 1), "c:"},
		{"id a string", strings.Replace(good, `22943`, `"22943"`, 1), "id:"},
		{"id a fraction", strings.Replace(good, `22943`, `22943.5`, 1), "id:"},
		{"ctx empty", strings.Replace(good, `"listener"`, `""`, 1), "ctx:"},
		{"msg a number", strings.Replace(good, `"Connection accepted"`, `3`, 1), "msg:"},
		{"attr a string", strings.Replace(good, `{"remote":"127.0.0.1:50550","connectionId":12}`, `"x"`, 1), "attr:"},
		{"attr key twice", strings.Replace(good, `"connectionId":12`, `"remote":"x"`, 1), "attr.remote twice"},
		{"durationMillis a fraction", strings.Replace(good, `"connectionId":12`, `"durationMillis":1.5`, 1), "durationMillis is not an integer"},
		{"durationMillis a string deep down", strings.Replace(good, `"connectionId":12`, `"a":[{"durationMillis":"1"}]`, 1), "attr.a.0.durationMillis"},
		{"tags not strings", strings.Replace(good, `}}`, `},"tags":[1]}`, 1), "tags:"},
		{"no id", strings.Replace(good, `"id":22943,`, ``, 1), `no "id" field`},
		{"no t", strings.Replace(good, `"t":{"$date":"2026-12-06T04:00:00.000+00:00"},`, ``, 1), `no "t" field`},
		{"unknown field", strings.Replace(good, `"ctx"`, `"thread":1,"ctx"`, 1), `"thread" is not one of mongod's`},
		{"zerolog's level field", strings.Replace(good, `"s":"I"`, `"level":"info"`, 1), `"level" is not one of mongod's`},
		{"out of order", `{"s":"I","t":{"$date":"2026-12-06T04:00:00.000+00:00"},"c":"NETWORK","id":1,"ctx":"x","msg":"m"}`, `"t" after "s"`},
		{"field twice", strings.Replace(good, `"ctx"`, `"id":1,"ctx"`, 1), `"id" twice`},

		{"slow query without ns", strings.Replace(slow, `"ns":"test.c",`, ``, 1), "attr.ns (missing)"},
		{"slow query ns a database", strings.Replace(slow, `"test.c"`, `"test"`, 1), "not db.coll"},
		{"slow query command a name", strings.Replace(slow, `{"find":"c","filter":{}}`, `"find"`, 1), "attr.command"},
		{"slow query command a name, truncated", strings.Replace(slow, `{"find":"c","filter":{}}`, `"find","truncated":true`, 1), "attr.command"},
		{"slow query command truncated to its first field", strings.Replace(slow, `{"find":"c","filter":{}}`, `{"find":"c"},"truncated":true`, 1), ""},
		{"slow query without type", strings.Replace(slow, `"type":"command",`, ``, 1), "attr.type"},
		{"slow query without durationMillis", strings.Replace(slow, `"durationMillis":120,`, ``, 1), "no attr.durationMillis"},
		{"slow query durationMillis a fraction", strings.Replace(slow, `120`, `120.5`, 1), "durationMillis is not an integer"},
		{"slow query another id", strings.Replace(slow, `51803`, `51800`, 1), "not mongod's 51803"},
		{"slow query without attr", strings.Replace(good, `"Connection accepted"`, `"Slow query"`, 1), "slow query"},
	} {
		err := CheckLine([]byte(c.line))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v\n%s", c.name, err, c.line)
		case c.want != "" && err == nil:
			t.Errorf("%s: passed, want an error with %q\n%s", c.name, c.want, c.line)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestCheck: a reader's lines are checked one by one, and the error
// quotes the bad ones by number, at most maxReported of them.
func TestCheck(t *testing.T) {
	if err := Check(strings.NewReader(good + "\n" + slow + "\n")); err != nil {
		t.Errorf("good log: %v", err)
	}
	if err := Check(strings.NewReader("")); err != nil {
		t.Errorf("empty log: %v", err)
	}
	err := Check(strings.NewReader(good + "\n" + "dumbodb: cannot listen\n\n" + slow)) // the last line without its newline
	if err == nil {
		t.Fatal("a log with a line of text passed")
	}
	for _, want := range []string{"2 of 4 log lines", "line 2: not valid JSON", "dumbodb: cannot listen", "line 3: not valid JSON"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant %q in it", err, want)
		}
	}
	var many strings.Builder
	for range maxReported + 5 {
		many.WriteString("x\n")
	}
	err = Check(strings.NewReader(many.String()))
	if err == nil || !strings.Contains(err.Error(), "and 5 more") || strings.Count(err.Error(), "line ") != maxReported {
		t.Errorf("%d bad lines: %v", maxReported+5, err)
	}
	long := strings.Replace(good, `"connectionId":12`, fmt.Sprintf(`"big":%q`, strings.Repeat("x", 1<<20)), 1)
	if err := Check(strings.NewReader(long + "\n")); err != nil {
		t.Errorf("a 1 MiB line: %v", err)
	}
}

type fakeT struct{ failed string }

func (*fakeT) Helper()                             {}
func (f *fakeT) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestCheckT(t *testing.T) {
	var f fakeT
	CheckT(&f, "server A", good+"\n")
	if f.failed != "" {
		t.Errorf("good log failed: %s", f.failed)
	}
	CheckT(&f, "server A", "panic: oops\n")
	if !strings.HasPrefix(f.failed, "server A: 1 of 1 log lines") {
		t.Errorf("bad log: %q", f.failed)
	}
}

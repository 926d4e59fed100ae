package query

import (
	"sort"
	"testing"

	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The operator tables (expr_registry.go and the other *_registry.go
// files) are kept in groups sorted by name, with no name twice; their
// unsupported rows answer with the errors they always had.

func TestRegistriesSorted(t *testing.T) {
	for table, groups := range map[string][][]string{
		"exprTable":      rowNames(exprTable),
		"accTable":       rowNames(accTable),
		"windowTable":    rowNames(windowTable),
		"stageTable":     rowNames(stageTable),
		"filterTopTable": rowNames(filterTopTable),
		"filterOpTable":  rowNames(filterOpTable),
		"schemaTable":    rowNames(schemaTable),
		"updateTable":    rowNames(updateTable),
	} {
		seen := map[string]bool{}
		for i, g := range groups {
			if !sort.StringsAreSorted(g) {
				t.Errorf("%s: group %d is not sorted: %v", table, i, g)
			}
			for _, name := range g {
				if seen[name] {
					t.Errorf("%s: %s is listed twice", table, name)
				}
				seen[name] = true
			}
		}
	}
}

func rowNames[R tableRow](table [][]R) (groups [][]string) {
	for _, g := range table {
		var names []string
		for _, r := range g {
			names = append(names, r.rowName())
		}
		groups = append(groups, names)
	}
	return groups
}

func TestUnsupportedAnswers(t *testing.T) {
	for _, c := range []struct{ cmd, args, want string }{
		{"expr", `{"$function": {}}`, "error 31261 Location31261: The body function must be specified."},
		{"expr", `{"$accumulator": {}}`, "error 168 InvalidPipelineOperator: Unrecognized expression '$accumulator'"},
		{"expr", `{"$where": "1"}`, "error 168 InvalidPipelineOperator: Unrecognized expression '$where'"},
		{"aggregate", `[{"$group": {"_id": null, "r": {"$accumulator": {}}}}]`, "error 4544707 Location4544707: $accumulator missing required argument 'init'"},
		{"aggregate", `[{"$group": {"_id": null, "r": {"$function": {}}}}]`, "error 15952 Location15952: unknown group operator '$function'"},
		{"aggregate", `[{"$group": {"_id": null, "r": {"$where": {}}}}]`, "error 15952 Location15952: unknown group operator '$where'"},
		{"aggregate", `[{"$setWindowFields": {"output": {"r": {"$function": {}}}}}]`, "error 9 FailedToParse: Unrecognized window function, $function"},
		{"aggregate", `[{"$setWindowFields": {"output": {"r": {"$function": {}, "window": {"documents": [0, 0]}}}}}]`, "error 9 FailedToParse: 'window' field is not allowed in '$function'"},
		{"update", `[{"$geoNear": {}}]`, "error 72 InvalidOptions: $geoNear is not allowed to be used within an update"},
		{"update", `[{"$search": {}}]`, "error 40324 Location40324: Unrecognized pipeline stage name: '$search'"},
		{"update", `[{"$lookup": {}}]`, "error 72 InvalidOptions: $lookup is not allowed to be used within an update"},
		{"filter", `{"$where": "1"}`, "error 2 BadValue: $where is not allowed in this context"},
		{"filter", `{"$function": {}}`, "error 2 BadValue: $function is not allowed in this context"},
		{"filter", `{"$sampleRate": 0.5}`, "error 238 NotImplemented: $sampleRate is not supported by DumboDB yet"},
		{"filter", `{"a": {"$regex": "x", "$options": "i"}}`, "[]"},
		{"filter", `{"a": {"$options": "i"}}`, "error 2 BadValue: $options needs a $regex"},
	} {
		docs := []bsoncore.Document{mustDoc(t, `{"_id": 1, "a": 1}`)}
		got := runCase(t, &ddCase{cmd: c.cmd, args: c.args}, &docs)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s %s: got %q, want %q", c.cmd, c.args, got, c.want)
		}
	}
}

func TestUnsupportedStages(t *testing.T) {
	n := 0
	for _, g := range stageTable {
		for _, e := range g {
			if !e.has(stageUnsupported) {
				continue
			}
			n++
			docs := []bsoncore.Document{}
			got := runCase(t, &ddCase{cmd: "aggregate", args: `[{"` + e.name + `": {}}]`}, &docs)
			want := "error 238 NotImplemented: " + e.name + " is not supported by DumboDB"
			if e.has(stageSearch) { // as a community mongod answers
				want = "error 31082 SearchNotEnabled: " + mongoerr.SearchNotEnabledError().Msg
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("%s: got %q, want %q", e.name, got, want)
			}
		}
	}
	if n != 9 { // as many as before the table, less $listSessions, $geoNear, $currentOp and $changeStreamSplitLargeEvent
		t.Errorf("%d unsupported stages, want 9", n)
	}
}

func TestRefusedFilterOperators(t *testing.T) {
	docs := []bsoncore.Document{mustDoc(t, `{"_id": 1, "a": 1}`)}
	n := 0
	for _, g := range filterOpTable {
		for _, e := range g {
			if e.refuse == nil {
				continue
			}
			n++
			got := runCase(t, &ddCase{cmd: "filter", args: `{"a": {"` + e.name + `": [0, 0]}}`}, &docs)
			if want := "error 238 NotImplemented: " + e.name + " is not supported by DumboDB yet"; len(got) != 1 || got[0] != want {
				t.Errorf("%s: got %q, want %q", e.name, got, want)
			}
		}
	}
	for _, g := range schemaTable {
		for _, e := range g {
			if e.refuse == nil {
				continue
			}
			n++
			got := runCase(t, &ddCase{cmd: "filter", args: `{"$jsonSchema": {"` + e.name + `": "x"}}`}, &docs)
			if want := "error 9 FailedToParse: $jsonSchema keyword '" + e.name + "' is not currently supported"; len(got) != 1 || got[0] != want {
				t.Errorf("%s: got %q, want %q", e.name, got, want)
			}
		}
	}
	if n != 1+7 { // as many as before the tables, less the five geo operators now served
		t.Errorf("%d refused field operators and schema keywords, want 8", n)
	}
}

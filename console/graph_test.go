package console

import (
	"fmt"
	"strings"
	"testing"
)

func commits(spec ...string) []commitInfo {
	var out []commitInfo
	for _, s := range spec {
		id, parents, _ := strings.Cut(s, ":")
		c := commitInfo{CommitID: id}
		if parents != "" {
			c.Parents = strings.Split(parents, ",")
		}
		out = append(out, c)
	}
	return out
}

func TestGraphLanes(t *testing.T) {
	cases := []struct {
		name    string
		commits []commitInfo
		lanes   string // each row's lane and the lanes its parents go on in
	}{
		{"linear", commits("C:B", "B:A", "A"), "0[0] 0[0] 0[]"},
		// M merges D (feature) into C (main); both grew from B.
		{"merge", commits("M:C,D", "C:B", "D:B", "B:A", "A"), "0[0 1] 0[0] 1[0] 0[0] 0[]"},
		// Two heads listed together join where they meet.
		{"two heads", commits("X:A", "Y:A", "A"), "0[0] 1[0] 0[]"},
		// A merge whose second parent is older than the first's line.
		{"criss", commits("M:B,A", "B:A", "A"), "0[0 1] 0[1] 1[]"},
	}
	for _, c := range cases {
		var got []string
		for _, r := range drawGraph(c.commits) {
			got = append(got, fmt.Sprintf("%d%v", r.Lane, r.Joins))
		}
		if s := strings.Join(got, " "); s != c.lanes {
			t.Errorf("%s: lanes %s, want %s", c.name, s, c.lanes)
		}
	}
	// A filtered page (a collection's history) lists commits whose real
	// parents it left out: drawn with them, each row opens a lane of its
	// own. Joined to the listed commits their parents lead to, they line
	// up, and a merge joins both of its lines.
	for _, c := range []struct {
		name        string
		page        []commitInfo
		leadsTo     map[string]string // parent -> the listed commit it leads to
		raw, simple string
	}{
		// F→E→D→C→B→A; the filter selects F, D and A.
		{"filtered line", commits("F:E", "D:C", "A"), map[string]string{"E": "D", "C": "A"}, "0[0] 1[1] 2[]", "0[0] 0[0] 0[]"},
		// M merges D into C, both grew from B, B from A; the filter
		// selects M, D and A.
		{"filtered merge", commits("M:C,D", "D:B", "A"), map[string]string{"C": "A", "B": "A"}, "0[0 1] 1[1] 2[]", "0[0 1] 1[0] 0[]"},
		// Both parents lead to the same commit: one join.
		{"filtered merge of unselected lines", commits("M:C,D", "A"), map[string]string{"C": "A", "D": "A"}, "0[0 1] 2[]", "0[0] 0[]"},
		// No listed commit below: the line ends.
		{"filtered root", commits("C:B"), map[string]string{"B": ""}, "0[0]", "0[]"},
	} {
		nearest := func(parent string) (string, error) {
			to, ok := c.leadsTo[parent]
			if !ok {
				t.Fatalf("%s: asked where %s leads, which the page lists or no commit has as parent", c.name, parent)
			}
			return to, nil
		}
		var raw, simple []string
		for _, r := range drawGraph(c.page) {
			raw = append(raw, fmt.Sprintf("%d%v", r.Lane, r.Joins))
		}
		page, err := simplifyParents(c.page, nearest)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range drawGraph(page) {
			simple = append(simple, fmt.Sprintf("%d%v", r.Lane, r.Joins))
		}
		if s := strings.Join(raw, " "); s != c.raw {
			t.Errorf("%s drawn with its real parents: lanes %s, want %s", c.name, s, c.raw)
		}
		if s := strings.Join(simple, " "); s != c.simple {
			t.Errorf("%s simplified: lanes %s, want %s", c.name, s, c.simple)
		}
	}
	// The second head bends from its dot into the lane of its parent.
	rows := drawGraph(commits("X:A", "Y:A", "A"))
	if want := fmt.Sprintf(`x1="%d" y1="%d" x2="%d" y2="%d"`, x(1), rowHeight/2, x(0), rowHeight); !strings.Contains(string(rows[1].SVG), want) {
		t.Errorf("Y's row lacks the line from it into lane 0 (%s):\n%s", want, rows[1].SVG)
	}
	// In a merge, the line that waited for the merged branch's head
	// comes into it from above.
	rows = drawGraph(commits("M:C,D", "C:B", "D:B", "B:A", "A"))
	if want := fmt.Sprintf(`x1="%d" y1="0" x2="%d" y2="%d"`, x(1), x(1), rowHeight/2); !strings.Contains(string(rows[2].SVG), want) {
		t.Errorf("D's row lacks the line into it from above (%s):\n%s", want, rows[2].SVG)
	}
}

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

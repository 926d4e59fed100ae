package console

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
)

// The commit graph is drawn one row per commit, newest first, as Git
// draws it: each lane is a line of descent waiting for the commit it
// leads to; a commit sits in the lane that waited for it (else a new
// one), its first parent takes that lane over, and each further parent
// joins the lane already waiting for it or opens one. Each row is a small
// SVG of the lanes that cross it, so the graph lines up with the table
// beside it at any width.

const (
	laneWidth = 14
	rowHeight = 30
)

// graphRow is the drawing of one commit's row: the lane of its dot and
// the lanes its parents go on in.
type graphRow struct {
	SVG   template.HTML
	Lane  int
	Joins []int
}

// drawGraph lays out commits (newest first, as dumboLog lists them).
func drawGraph(commits []commitInfo) []graphRow {
	var lanes []string // the commit each lane waits for; "" free
	rows := make([]graphRow, len(commits))
	for i, cm := range commits {
		before := append([]string(nil), lanes...)
		col := laneOf(lanes, cm.CommitID)
		if col < 0 {
			col = freeLane(&lanes)
		}
		// Lanes that waited for this commit end in it.
		for j, id := range lanes {
			if id == cm.CommitID {
				lanes[j] = ""
			}
		}
		var joins []int // lanes this commit's parents continue in
		for p, parent := range cm.Parents {
			switch j := laneOf(lanes, parent); {
			case p == 0 && j < 0:
				lanes[col] = parent
				joins = append(joins, col)
			case j >= 0:
				joins = append(joins, j)
			default:
				k := freeLane(&lanes)
				lanes[k] = parent
				joins = append(joins, k)
			}
		}
		lanes = trimLanes(lanes)
		rows[i] = graphRow{SVG: rowSVG(before, lanes, cm.CommitID, col, joins), Lane: col, Joins: joins}
	}
	return rows
}

// simplifyParents rewrites the parents of a filtered page's commits, as
// git log --graph -- path draws them: a listed commit's real parents are
// mostly commits the filter left out, so each parent is replaced by the
// listed commit it leads to, nearest(parent) (the newest commit the
// filter selects in the parent's history, "" none). A parent that is
// listed leads to itself; two parents that lead to the same commit join
// it once.
func simplifyParents(commits []commitInfo, nearest func(parent string) (string, error)) ([]commitInfo, error) {
	listed := map[string]bool{}
	for _, cm := range commits {
		listed[cm.CommitID] = true
	}
	found := map[string]string{} // parent -> the listed commit it leads to
	out := make([]commitInfo, len(commits))
	for i, cm := range commits {
		out[i] = cm
		out[i].Parents = nil
		for _, p := range cm.Parents {
			to, ok := found[p]
			switch {
			case ok:
			case listed[p]:
				to = p
			default:
				var err error
				if to, err = nearest(p); err != nil {
					return nil, err
				}
			}
			found[p] = to
			if to != "" && !slices.Contains(out[i].Parents, to) {
				out[i].Parents = append(out[i].Parents, to)
			}
		}
	}
	return out, nil
}

func laneOf(lanes []string, id string) int {
	for i, l := range lanes {
		if l == id {
			return i
		}
	}
	return -1
}

// freeLane is the first free lane, opening one past the last if none.
func freeLane(lanes *[]string) int {
	if i := laneOf(*lanes, ""); i >= 0 {
		return i
	}
	*lanes = append(*lanes, "")
	return len(*lanes) - 1
}

func trimLanes(lanes []string) []string {
	for len(lanes) > 0 && lanes[len(lanes)-1] == "" {
		lanes = lanes[:len(lanes)-1]
	}
	return lanes
}

// laneColors tell lines of descent apart.
var laneColors = []string{"#2f6fdb", "#d9480f", "#2b8a3e", "#ae3ec9", "#c92a2a", "#0b7285", "#e67700", "#5f3dc4"}

// rowSVG draws one row: lines coming from above into the commit or past
// it, the commit's dot, and lines from it to its parents' lanes below.
func rowSVG(before, after []string, id string, col int, joins []int) template.HTML {
	width := max(len(before), len(after), col+1) * laneWidth
	mid := rowHeight / 2
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" width="%d" height="%d" viewBox="0 0 %d %d" aria-hidden="true">`, width, rowHeight, width, rowHeight)
	line := func(x1, y1, x2, y2, lane int) {
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`, x1, y1, x2, y2, laneColors[lane%len(laneColors)])
	}
	for j, waits := range before {
		switch {
		case waits == id:
			line(x(j), 0, x(col), mid, j)
		case waits != "":
			line(x(j), 0, x(j), rowHeight, j)
		}
	}
	for _, j := range joins {
		line(x(col), mid, x(j), rowHeight, j)
	}
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="5" fill="%s"/></svg>`, x(col), mid, laneColors[col%len(laneColors)])
	return template.HTML(b.String())
}

func x(lane int) int { return lane*laneWidth + laneWidth/2 }

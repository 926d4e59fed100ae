package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// scaleTable is the Scale group's results by step, target and size.
type scaleTable struct {
	sizes []int       // ascending
	keys  [][2]string // step, target, in report order
	cell  map[[2]string]map[int]Result
}

// newScaleTable reads the rows that have a per-document figure (Docs):
// benchmark names are Scale/<size>/<step>.
func newScaleTable(rows []Result) scaleTable {
	t := scaleTable{cell: map[[2]string]map[int]Result{}}
	for _, r := range rows {
		parts := strings.SplitN(r.Benchmark, "/", 3)
		if r.Docs == 0 || len(parts) < 3 {
			continue
		}
		k := [2]string{parts[2], r.Target}
		if t.cell[k] == nil {
			t.cell[k] = map[int]Result{}
			t.keys = append(t.keys, k)
		}
		t.cell[k][r.Docs] = r
		if !slices.Contains(t.sizes, r.Docs) {
			t.sizes = append(t.sizes, r.Docs)
		}
	}
	slices.Sort(t.sizes)
	return t
}

// scaleMarkdown renders the figures per document of the Scale group, and
// with two sizes or more the growth from the smallest to the largest and
// a chart of it.
func scaleMarkdown(rows []Result) string {
	t := newScaleTable(rows)
	if len(t.keys) == 0 {
		return ""
	}
	small, big := t.sizes[0], t.sizes[len(t.sizes)-1]
	growth := len(t.sizes) > 1
	var b strings.Builder
	b.WriteString("\nPer document: each step's median time of one call, or the amount measured, ÷ the documents in the collection.")
	if growth {
		fmt.Fprintf(&b, " `%[1]s ÷ %[2]s` divides the figures per document at %[1]s by those at %[2]s: 1.00 is a cost in proportion to the documents, %[3]s one that does not grow with them.",
			ScaleLabel(big), ScaleLabel(small), multiplier(float64(small)/float64(big)))
	}
	b.WriteString("\n\n| step | target |")
	for _, n := range t.sizes {
		fmt.Fprintf(&b, " %s |", ScaleLabel(n))
	}
	if growth {
		fmt.Fprintf(&b, " %s ÷ %s |", ScaleLabel(big), ScaleLabel(small))
	}
	b.WriteString("\n|---|---|" + strings.Repeat("--:|", len(t.sizes)))
	if growth {
		b.WriteString("--:|")
	}
	b.WriteString("\n")
	for _, k := range t.keys {
		fmt.Fprintf(&b, "| %s | %s |", k[0], k[1])
		for _, n := range t.sizes {
			fmt.Fprintf(&b, " %s |", perDocCell(t.cell[k][n]))
		}
		if growth {
			fmt.Fprintf(&b, " %s |", t.growth(k, small, big))
		}
		b.WriteString("\n")
	}
	if growth {
		b.WriteString(t.chart())
	}
	return b.String()
}

// perDocCell prints a result's figure per document, or why it has none.
func perDocCell(r Result) string {
	switch {
	case r.Status == "":
		return ""
	case r.Status != StatusOK:
		return r.Status
	case r.Quantity:
		return fine(r.PerDoc) + " " + r.Unit
	case r.PerDoc < 1:
		return fine(r.PerDoc*1e3) + " ns"
	default:
		return duration(r.PerDoc)
	}
}

// fine prints as num does, and two significant figures below 0.01,
// where num would print 0.00.
func fine(x float64) string {
	if x < 0.01 {
		return strconv.FormatFloat(x, 'g', 2, 64)
	}
	return num(x)
}

// growth divides a step's figure per document at size big by that at
// size small ("" when either is missing).
func (t scaleTable) growth(k [2]string, small, big int) string {
	a, b := t.cell[k][small], t.cell[k][big]
	if a.Status != StatusOK || b.Status != StatusOK || a.PerDoc <= 0 {
		return ""
	}
	return multiplier(b.PerDoc / a.PerDoc)
}

// chartWidth is the longest bar, in characters.
const chartWidth = 40

// chart draws, for each step and target measured at every size, one bar
// per size of its figure per document, scaled to the largest of them:
// bars of equal length are a cost in proportion to the documents.
func (t scaleTable) chart() string {
	var b strings.Builder
	b.WriteString("\nPer document by size, each step's bars scaled to its largest (equal bars: a cost in proportion to the documents):\n\n```text\n")
	for _, k := range t.keys {
		top := 0.0
		for _, n := range t.sizes {
			r := t.cell[k][n]
			if r.Status != StatusOK {
				top = -1
				break
			}
			top = max(top, r.PerDoc)
		}
		if top <= 0 {
			continue
		}
		fmt.Fprintf(&b, "%s (%s)\n", k[0], k[1])
		for _, n := range t.sizes {
			r := t.cell[k][n]
			fmt.Fprintf(&b, "  %-5s %s %s\n", ScaleLabel(n), bar(r.PerDoc/top), perDocCell(r))
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// bar draws a fraction (0 to 1) of chartWidth in block characters, to an
// eighth of a character, padded to chartWidth.
func bar(frac float64) string {
	eighths := int(frac*chartWidth*8 + 0.5)
	s := strings.Repeat("█", eighths/8)
	if rest := eighths % 8; rest > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[rest-1])
	}
	return s + strings.Repeat(" ", chartWidth-len([]rune(s)))
}

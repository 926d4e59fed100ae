package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestParseScales(t *testing.T) {
	for in, want := range map[string][]int{
		"1M":             {1_000_000},
		"10M":            {10_000_000},
		"100K":           {100_000},
		"2K":             {2000},
		"1m, 100k,2500":  {1_000_000, 100_000, 2500},
		"1M,10M":         {1_000_000, 10_000_000},
		"1000K":          {1_000_000},
		"":               nil,
		"0":              nil,
		"-1K":            nil,
		"1.5M":           nil,
		"1e6":            nil,
		"1G":             nil,
		"K":              nil,
		"1M,":            nil,
		"500":            nil, // under 1K
		"1050":           nil, // not a multiple of 100
		"1M,1000K":       nil, // twice
		"9223372036855M": nil, // overflows
	} {
		got, err := ParseScales(in)
		switch {
		case want == nil && err == nil:
			t.Errorf("ParseScales(%q) = %v, want an error", in, got)
		case want != nil && (err != nil || !slices.Equal(got, want)):
			t.Errorf("ParseScales(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestScaleLabelReadsBack(t *testing.T) {
	for n, want := range map[int]string{1000: "1K", 2000: "2K", 100_000: "100K", 1_000_000: "1M", 10_000_000: "10M", 2500: "2500", 1_500_000: "1500K"} {
		if got := ScaleLabel(n); got != want {
			t.Errorf("ScaleLabel(%d) = %s, want %s", n, got, want)
		}
		if back, err := ParseScales(ScaleLabel(n)); err != nil || back[0] != n {
			t.Errorf("ParseScales(ScaleLabel(%d)) = %v, %v", n, back, err)
		}
	}
}

// TestOrders checks the generator: the same order each time, about 190
// bytes of BSON with every field, a unique seq, 100 orders per customer,
// all three statuses.
func TestOrders(t *testing.T) {
	const n = 20_000
	perCustomer := map[int32]int{}
	statuses := map[string]int{}
	total := 0
	for i := range n {
		raw := newOrder(i, n).appendBSON(nil)
		if again := newOrder(i, n).appendBSON(nil); string(raw) != string(again) {
			t.Fatalf("order %d differs from itself made again", i)
		}
		var o struct {
			ID       bson.ObjectID `bson:"_id"`
			Seq      int32         `bson:"seq"`
			Customer int32         `bson:"customer"`
			Status   string        `bson:"status"`
			Amount   float64       `bson:"amount"`
			Note     *string       `bson:"note"`
			Items    []struct {
				SKU string `bson:"sku"`
				Qty int32  `bson:"qty"`
			} `bson:"items"`
		}
		if err := bson.Unmarshal(raw, &o); err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
		if o.ID != objectID(i) || int(o.Seq) != i || o.Note == nil || len(o.Items) != 2 || o.Items[0].Qty < 1 || !strings.HasPrefix(o.Items[1].SKU, "SKU-") || o.Amount < 0 || o.Amount >= 1000 {
			t.Fatalf("order %d = %+v", i, o)
		}
		perCustomer[o.Customer]++
		statuses[o.Status]++
		total += len(raw)
	}
	if avg := total / n; avg < 170 || avg > 200 {
		t.Errorf("orders average %d bytes, want about 190", avg)
	}
	if len(perCustomer) != customers(n) {
		t.Errorf("%d customers, want %d", len(perCustomer), customers(n))
	}
	for c, k := range perCustomer {
		if k != 100 {
			t.Fatalf("customer %d has %d orders, want 100", c, k)
		}
	}
	// 10 %, 30 %, 60 %, give or take.
	if p := statuses["pending"]; len(statuses) != 3 || p < n/12 || p > n/8 || statuses["delivered"] < n/2 {
		t.Errorf("statuses %v, want three at about 10, 30 and 60 %%", statuses)
	}
}

func TestPendingOrdersCountsTheCustomersOwn(t *testing.T) {
	const n = 5000
	want := map[int]int{}
	for i := range n {
		if o := newOrder(i, n); o.status == "pending" {
			want[int(o.customer)]++
		}
	}
	for c := range customers(n) {
		if got := pendingOrders(c, n); got != want[c] {
			t.Errorf("pendingOrders(%d) = %d, want %d", c, got, want[c])
		}
	}
}

func TestPerDocDividesOneCallByTheDocuments(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Result
		want float64
	}{
		// A load of 2,000 documents in one call of 10 ms: 5 µs per document.
		{"load", Result{Unit: "doc", Docs: 2000, SamplesUS: []float64{5}, Units: 2000}, 5},
		// Two calls of 4 and 6 ms over 2,000 documents: a median of 5 ms.
		{"op", Result{Unit: "op", Docs: 2000, SamplesUS: []float64{4000, 6000}, Units: 2}, 2.5},
		// updateMany of 20 documents a call, 2 µs each: 40 µs a call.
		{"per updated document", Result{Unit: "doc", Docs: 2000, SamplesUS: []float64{2, 2, 2}, Units: 60}, 0.02},
		{"amount", Result{Unit: "B", Docs: 2000, Quantity: true, SamplesUS: []float64{400_000}, Units: 1}, 200},
	} {
		c.r.Status = StatusOK
		rs := []Result{c.r}
		Summarize(rs, "")
		if got := rs[0].PerDoc; fmt.Sprintf("%.6g", got) != fmt.Sprintf("%.6g", c.want) {
			t.Errorf("%s: PerDoc = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestScaleStepsRunInOrderAndDropAfterTheLast(t *testing.T) {
	bs := scaleBenchmarks([]int{2000, 1_000_000})
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
		if b.Group != GroupScale || (b.Docs == 0) != strings.HasSuffix(b.Name, "RatioToBSON") {
			t.Errorf("%s: group %s, docs %d", b.Name, b.Group, b.Docs)
		}
	}
	at := func(name string) int { return slices.Index(names, name) }
	if at("Scale/2K/Load") != 0 || at("Scale/1M/Load") != len(bs)/2 || at("Scale/1M/CreateIndex/Single") < 0 {
		t.Fatalf("steps: %v", names)
	}
	if at("Scale/2K/Sort/Unindexed/Limit10") > at("Scale/2K/CreateIndex/Single") || at("Scale/2K/CreateIndex/Unique") > at("Scale/2K/Find/Indexed/Eq/1") {
		t.Errorf("a scan comes after the indexes, or a find before them: %v", names)
	}
	s := &scaleSize{n: 2000, loaded: map[string]*scaleData{}}
	s.benchmarks()
	if got := s.lastOn(&Config{}, true); got != "" {
		t.Errorf("a run of every family runs Scale, to %s", got)
	}
	cfg := &Config{Families: []string{"Scale"}}
	if got := s.lastOn(cfg, true); got != "Scale/2K/Restart/Kill9" {
		t.Errorf("last step on DumboDB: %s", got)
	}
	if got := s.lastOn(cfg, false); got != "Scale/2K/Disk/RatioToBSON" {
		t.Errorf("last step elsewhere: %s", got)
	}
	cfg.Filter = regexp.MustCompile(`/Find/`)
	if got := s.lastOn(cfg, true); got != "Scale/2K/Find/Covered" {
		t.Errorf("last step matching /Find/: %s", got)
	}
}

func scaleResult(size int, step, target string, perDoc float64) Result {
	return Result{Benchmark: fmt.Sprintf("Scale/%s/%s", ScaleLabel(size), step), Group: GroupScale, Target: target,
		Unit: "op", Status: StatusOK, Docs: size, PerDoc: perDoc}
}

func TestScaleMarkdownShowsGrowthPerDocument(t *testing.T) {
	rows := []Result{
		scaleResult(100_000, "Count/Unindexed", "dumbo", 0.2),
		scaleResult(100_000, "Find/Indexed/Eq/1", "dumbo", 0.001),
		scaleResult(1_000_000, "Count/Unindexed", "dumbo", 0.3),
		scaleResult(1_000_000, "Find/Indexed/Eq/1", "dumbo", 0.0001),
		{Benchmark: "Scale/1M/Disk/RatioToBSON", Group: GroupScale, Target: "dumbo", Unit: "× BSON", Status: StatusOK, Quantity: true},
	}
	md := scaleMarkdown(rows)
	for _, want := range []string{
		"| step | target | 100K | 1M | 1M ÷ 100K |",
		"| Count/Unindexed | dumbo | 200 ns | 300 ns | 1.50 |",
		"| Find/Indexed/Eq/1 | dumbo | 1.00 ns | 0.10 ns | 0.10 |",
		"0.10 one that does not grow",
		"Count/Unindexed (dumbo)\n  100K  " + strings.Repeat("█", 26) + "▋",
		"  1M    " + strings.Repeat("█", 40) + " 300 ns",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("scale section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "RatioToBSON") {
		t.Errorf("a ratio has no figure per document:\n%s", md)
	}
	one := scaleMarkdown(rows[:2])
	if strings.Contains(one, "÷ 100K") || strings.Contains(one, "```") {
		t.Errorf("one size: no growth column, no chart:\n%s", one)
	}
}

func TestBarDrawsEighths(t *testing.T) {
	for frac, want := range map[float64]string{1: strings.Repeat("█", 40), 0.5: strings.Repeat("█", 20), 0: "", 1.0 / 320: "▏", 0.05: "██"} {
		got := bar(frac)
		if strings.TrimRight(got, " ") != want || len([]rune(got)) != chartWidth {
			t.Errorf("bar(%v) = %q, want %q padded to %d", frac, got, want, chartWidth)
		}
	}
}

func TestLiveBytesLeavesOutDumboDBsOwnEntries(t *testing.T) {
	dir := t.TempDir()
	for path, size := range map[string]int{"mongod.lock": 0, "shop/manifest": 100, "shop/abc": 1000, "shop/wal/1.seg": 64 << 10,
		".undrop-1-old/abc": 5000, ".spare-2/wal/1.seg": 64 << 10} {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := liveBytes(dir); err != nil || got != 1100 {
		t.Errorf("liveBytes = %d, %v; want 1100, the live database without its log", got, err)
	}
}

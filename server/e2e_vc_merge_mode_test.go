package server_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

var mergeModes = []string{"fieldDivergent", "fieldTouched", "documentTouched", "documentDivergent"}

// sideEdit is what one side of a merge does to a document: nothing, a
// deletion, or new values for some fields (from a small set, so both sides
// often pick the same one).
type sideEdit struct {
	deleted bool
	set     map[string]int
}

func randomEdit(rng *rand.Rand) sideEdit {
	switch rng.IntN(6) {
	case 0:
		return sideEdit{}
	case 1:
		return sideEdit{deleted: true}
	}
	e := sideEdit{set: map[string]int{}}
	for _, f := range []string{"a", "b", "c"} {
		if rng.IntN(2) == 0 {
			e.set[f] = rng.IntN(3)
		}
	}
	return e
}

// apply is the document after the edit (nil: deleted).
func (e sideEdit) apply(base map[string]int) map[string]int {
	if e.deleted {
		return nil
	}
	out := map[string]int{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range e.set {
		out[k] = v
	}
	return out
}

// conflicts is the model: whether a mode must report a conflict for a
// document that base, ours and theirs hold.
func modelConflicts(mode string, base, ours, theirs map[string]int) bool {
	changed := func(side map[string]int, f string) bool { return side[f] != base[f] }
	oursChanged, theirsChanged := fmt.Sprint(ours) != fmt.Sprint(base), fmt.Sprint(theirs) != fmt.Sprint(base)
	switch {
	case !oursChanged || !theirsChanged:
		return false
	case ours == nil && theirs == nil:
		return false // deleted on both sides
	case ours == nil || theirs == nil:
		return true // deleted against changed, in every mode
	}
	same := fmt.Sprint(ours) == fmt.Sprint(theirs)
	switch mode {
	case "documentTouched":
		return true
	case "documentDivergent":
		return !same
	}
	for _, f := range []string{"a", "b", "c"} {
		if changed(ours, f) && changed(theirs, f) && (mode == "fieldTouched" || ours[f] != theirs[f]) {
			return true
		}
	}
	return false
}

// TestMergeModesAgainstModel: random two-sided edits of the same 40
// documents (and one changed alike on both sides) in four collections, one per merge mode; the merge must report
// exactly the conflicts the model gives for each mode, and a dry run must
// report the same counts first without changing anything.
func TestMergeModesAgainstModel(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("modes")
	for _, m := range mergeModes {
		mustRun(t, db, bson.D{{Key: "create", Value: m}, {Key: "mergeMode", Value: m}})
	}
	rng := rand.New(rand.NewPCG(3, 5))
	base := map[int]map[string]int{}
	for id := range 41 {
		base[id] = map[string]int{"a": rng.IntN(3), "b": rng.IntN(3), "c": rng.IntN(3)}
		for _, m := range mergeModes {
			if _, err := db.Collection(m).InsertOne(ctx, docOf(id, base[id])); err != nil {
				t.Fatal(err)
			}
		}
	}
	baseCommit := mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})["commitId"]
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "theirs"}})
	theirsDB := c.Database("modes@theirs")
	want := map[string][]int{}
	for id := range 41 {
		o, th := randomEdit(rng), randomEdit(rng)
		if id == 40 { // the same change on both sides
			o = sideEdit{set: map[string]int{"a": 9}}
			th = o
		}
		ours, theirs := o.apply(base[id]), th.apply(base[id])
		for _, m := range mergeModes {
			writeVersion(t, db.Collection(m), id, ours)
			writeVersion(t, theirsDB.Collection(m), id, theirs)
			if modelConflicts(m, base[id], ours, theirs) {
				want[m] = append(want[m], id)
			}
		}
	}
	t.Logf("conflicts each mode must report: %v", want)
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "ours"}})
	mustRun(t, theirsDB, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "theirs"}})

	dry := mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "theirs"}, {Key: "dryRun", Value: true}})
	if dry["mergeBase"] != baseCommit {
		t.Errorf("dry run: merge base %v, want the commit both branched from, %v", dry["mergeBase"], baseCommit)
	}
	for _, m := range mergeModes {
		if got, _ := get(dry, "conflicts", m).(int32); int(got) != len(want[m]) {
			t.Errorf("dry run: %s would have %d conflicts, want %d", m, got, len(want[m]))
		}
		// It names them too, in _id order.
		var named []int
		if ids, ok := get(dry, "conflictIds", m).(bson.A); ok {
			for _, id := range ids {
				named = append(named, int(id.(int32)))
			}
		}
		if fmt.Sprint(named) != fmt.Sprint(want[m]) {
			t.Errorf("dry run: %s names the conflicts %v, want %v", m, named, want[m])
		}
	}
	if st := mustRun(t, db, bson.D{{Key: "dumboStatus", Value: 1}}); st["dirty"] != false || st["merge"] != nil {
		t.Fatalf("a dry run changed the branch: %v", st)
	}
	_, err := db.RunCommand(ctx, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "theirs"}}).Raw()
	if !isCode(err, 20002) && len(want["documentTouched"]) > 0 {
		t.Fatalf("merge: %v, want MergeConflict", err)
	}
	for _, m := range mergeModes {
		res := mustRun(t, db, bson.D{{Key: "dumboConflicts", Value: 1}, {Key: "collection", Value: m}})
		var got []int
		for _, cf := range res["conflicts"].(bson.A) {
			got = append(got, int(get(cf, "_id").(int32)))
		}
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(want[m]) {
			t.Errorf("%s: conflicts on %v, want %v", m, got, want[m])
		}
	}
}

func docOf(id int, fields map[string]int) bson.D {
	d := bson.D{{Key: "_id", Value: id}}
	for _, f := range []string{"a", "b", "c"} {
		if v, ok := fields[f]; ok {
			d = append(d, bson.E{Key: f, Value: v})
		}
	}
	return d
}

// writeVersion makes a collection's document the given version (nil:
// none).
func writeVersion(t *testing.T, coll *mongo.Collection, id int, v map[string]int) {
	t.Helper()
	var err error
	if v == nil {
		_, err = coll.DeleteOne(ctx, bson.M{"_id": id})
	} else {
		_, err = coll.ReplaceOne(ctx, bson.M{"_id": id}, docOf(id, v))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestMergeStrategyAndModeOption: mergeMode is set by create and collMod,
// listed by listCollections and refused when unknown; strategy "theirs"
// settles every conflict with their version and commits the merge,
// "ours" with ours.
func TestMergeStrategyAndModeOption(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	db := c.Database("strat")
	mustRun(t, db, bson.D{{Key: "create", Value: "docs"}})
	mustRun(t, db, bson.D{{Key: "collMod", Value: "docs"}, {Key: "mergeMode", Value: "documentTouched"}})
	specs, err := db.ListCollectionSpecifications(ctx, bson.M{"name": "docs"})
	if err != nil || len(specs) != 1 || specs[0].Options.Lookup("mergeMode").StringValue() != "documentTouched" {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	for _, cmd := range []bson.D{
		{{Key: "create", Value: "bad"}, {Key: "mergeMode", Value: "nope"}},
		{{Key: "collMod", Value: "docs"}, {Key: "mergeMode", Value: 1}},
	} {
		if _, err := db.RunCommand(ctx, cmd).Raw(); !isCode(err, 2) && !isCode(err, 14) {
			t.Errorf("%v: %v, want a refusal", cmd, err)
		}
	}
	for _, strategy := range []string{"theirs", "ours"} {
		coll := db.Collection("docs")
		if _, err := coll.DeleteMany(ctx, bson.M{}); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": 1, "v": 0}, bson.M{"_id": 2, "v": 0}}); err != nil {
			t.Fatal(err)
		}
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base " + strategy}})
		mustRun(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "b" + strategy}})
		other := c.Database("strat@b" + strategy)
		if _, err := other.Collection("docs").UpdateMany(ctx, bson.M{}, bson.M{"$set": bson.M{"v": "theirs"}}); err != nil {
			t.Fatal(err)
		}
		mustRun(t, other, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "theirs"}})
		if _, err := coll.UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"v": "ours"}}); err != nil {
			t.Fatal(err)
		}
		mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "ours"}})
		res := mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "b" + strategy}, {Key: "strategy", Value: strategy}})
		if res["commitId"] == "" {
			t.Fatalf("strategy %s: %v", strategy, res)
		}
		var doc bson.M
		if err := coll.FindOne(ctx, bson.M{"_id": 1}).Decode(&doc); err != nil || doc["v"] != strategy {
			t.Errorf("strategy %s: the conflicted document is %v (%v)", strategy, doc, err)
		}
		if err := coll.FindOne(ctx, bson.M{"_id": 2}).Decode(&doc); err != nil || doc["v"] != "theirs" {
			t.Errorf("strategy %s: the document only they changed is %v (%v)", strategy, doc, err)
		}
		if st := mustRun(t, db, bson.D{{Key: "dumboStatus", Value: 1}}); st["dirty"] != false || st["merge"] != nil {
			t.Errorf("strategy %s: the merge is not committed: %v", strategy, st)
		}
	}
	if _, err := db.RunCommand(ctx, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "btheirs"}, {Key: "strategy", Value: "mine"}}).Raw(); !isCode(err, 2) {
		t.Errorf("an unknown strategy: %v, want BadValue", err)
	}
}

// TestMergeDryRunNamesConflicts: a dry run names the first 100 conflicting
// _ids of each collection in _id order, counts them all, and a collection
// without conflicts is not named.
func TestMergeDryRunNamesConflicts(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	ctx := t.Context()
	db := c.Database("preview")
	var docs []any
	for id := range 150 {
		docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 0}})
	}
	for _, coll := range []string{"many", "few", "calm"} {
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, db, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	mustRun(t, db, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "theirs"}})
	theirs := c.Database("preview@theirs")
	// many: every document set differently on both sides; few: the
	// documents 7 and 3; calm: changed on one side only.
	for side, d := range []*mongo.Database{db, theirs} {
		set := bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: side + 1}}}}
		if _, err := d.Collection("many").UpdateMany(ctx, bson.D{}, set); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Collection("few").UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{7, 3}}}}}, set); err != nil {
			t.Fatal(err)
		}
		mustRun(t, d, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "side"}})
	}
	if _, err := theirs.Collection("calm").UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 5}}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, theirs, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "calm"}})

	dry := mustRun(t, db, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "theirs"}, {Key: "dryRun", Value: true}})
	ids := func(coll string) []int {
		var out []int
		for _, id := range get(dry, "conflictIds", coll).(bson.A) {
			out = append(out, int(id.(int32)))
		}
		return out
	}
	if got := get(dry, "conflicts", "many"); got != int32(150) {
		t.Errorf("many: %v conflicts, want 150", got)
	}
	if got := ids("many"); len(got) != 100 || got[0] != 0 || got[99] != 99 {
		t.Errorf("many: named %d conflicts (%v), want the first 100 by _id", len(got), got)
	}
	if got := ids("few"); fmt.Sprint(got) != "[3 7]" || get(dry, "conflicts", "few") != int32(2) {
		t.Errorf("few: named %v of %v conflicts, want [3 7] of 2", got, get(dry, "conflicts", "few"))
	}
	if got := get(dry, "conflictIds", "calm"); got != nil {
		t.Errorf("calm has no conflicts but is named: %v", got)
	}
	// Up to date: nothing named.
	upToDate := mustRun(t, theirs, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "theirs"}, {Key: "dryRun", Value: true}})
	if n := len(get(upToDate, "conflictIds").(bson.D)); n != 0 || upToDate["upToDate"] != true {
		t.Errorf("a merge of a branch into itself: %v", upToDate)
	}
}

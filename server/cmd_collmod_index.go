package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
)

// collModIndex is collMod's index argument: which index, and the options
// to change on it (nil or zero: not given).
type collModIndex struct {
	keyPattern bsoncore.Document
	name       string
	hidden     *bool
	expire     bsoncore.Value
	unique     *bool
	prepare    *bool // prepareUnique
	forceNon   *bool // forceNonUnique
}

// count is the number of modifications the argument asks for.
func (m *collModIndex) count() int {
	n := 0
	for _, b := range []*bool{m.hidden, m.unique, m.prepare, m.forceNon} {
		if b != nil {
			n++
		}
	}
	if m.expire.Type != 0 {
		n++
	}
	return n
}

func parseCollModIndex(d bsoncore.Document) (*collModIndex, error) {
	m := &collModIndex{}
	els, err := d.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	for _, el := range els {
		if err := m.parseField(el.Key(), el.Value()); err != nil {
			return nil, err
		}
	}
	switch {
	case m.keyPattern != nil && m.name != "":
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot specify both key pattern and name.")
	case m.keyPattern == nil && m.name == "":
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Must specify either index name or key pattern.")
	case m.count() == 0:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds, hidden, unique, or prepareUnique field")
	case m.unique != nil && m.forceNon != nil:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "collMod does not support 'unique' and 'forceNonUnique' options at the same time")
	}
	return m, nil
}

// parseField reads one field of the index argument; the booleans are
// mongod's safeBool (bools and numbers).
func (m *collModIndex) parseField(k string, v bsoncore.Value) error {
	boolField := func(dst **bool) error {
		b, ok := asBool(v)
		if !ok {
			return typeMismatch("collMod", "index."+k, v, "bool")
		}
		*dst = &b
		return nil
	}
	switch k {
	case "keyPattern":
		kp, ok := v.DocumentOK()
		if !ok {
			return typeMismatch("collMod", "index.keyPattern", v, "object")
		}
		m.keyPattern = kp
	case "name":
		s, ok := v.StringValueOK()
		if !ok {
			return typeMismatch("collMod", "index.name", v, "string")
		}
		m.name = s
	case "expireAfterSeconds":
		m.expire = v
	case "hidden":
		return boolField(&m.hidden)
	case "unique":
		return boolField(&m.unique)
	case "prepareUnique":
		return boolField(&m.prepare)
	case "forceNonUnique":
		return boolField(&m.forceNon)
	default:
		return mongoerr.New(mongoerr.Location40415, "BSON field 'collMod.index.%s' is an unknown field.", k)
	}
	return nil
}

// find returns the position of the index the argument names.
func (m *collModIndex) find(specs []*index.Spec, ns string) (int, error) {
	var probe *index.Spec
	if m.keyPattern != nil {
		p, err := index.ParseSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", m.keyPattern).Build(), nil)
		if err != nil {
			return 0, err
		}
		if p.IsID() {
			return 0, mongoerr.New(mongoerr.BadValue, "cannot modify the _id index")
		}
		probe = p
	}
	if m.name == index.IDIndexName {
		return 0, mongoerr.New(mongoerr.BadValue, "cannot modify the _id index")
	}
	found := -1
	for i, s := range specs {
		if (probe != nil && s.SameKey(probe)) || (probe == nil && s.Name == m.name) {
			if found >= 0 {
				return 0, mongoerr.New(mongoerr.AmbiguousIndexKeyPattern, "index keyPattern %s matches more than one index", index.ShellDoc(m.keyPattern))
			}
			found = i
		}
	}
	if found < 0 {
		what := m.name
		if probe != nil {
			what = index.ShellDoc(m.keyPattern)
		}
		return 0, mongoerr.New(mongoerr.IndexNotFound, "cannot find index %s for ns %s", what, ns)
	}
	return found, nil
}

// indexChange is what a collMod does to one index once the requested
// changes that change nothing are dropped, as mongod drops them.
type indexChange struct {
	hidden, prepare       *bool
	expire                bsoncore.Value
	toUnique, toNonUnique bool
}

// resolve checks the argument against the index s with mongod's rules.
// unique: true needs prepareUnique first (so that no new duplicate can
// appear between the check and the conversion); prepareUnique on a
// unique index and unique on a unique one are no-ops.
func (m *collModIndex) resolve(s *index.Spec) (indexChange, error) {
	ch := indexChange{expire: m.expire}
	if m.unique != nil {
		switch {
		case !*m.unique:
			return ch, mongoerr.New(mongoerr.BadValue, "Cannot make index non-unique")
		case !s.Unique && !s.PrepareUnique:
			return ch, mongoerr.New(mongoerr.InvalidOptions, "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.")
		}
		ch.toUnique = !s.Unique
	}
	if m.hidden != nil && *m.hidden != s.Hidden {
		ch.hidden = m.hidden
	}
	if m.prepare != nil && *m.prepare != s.PrepareUnique && !s.Unique {
		ch.prepare = m.prepare
	}
	if m.forceNon != nil {
		if !*m.forceNon {
			return ch, mongoerr.New(mongoerr.BadValue, "'forceNonUnique: false' is not supported")
		}
		ch.toNonUnique = s.Unique
	}
	return ch, nil
}

// apply returns s with the change, validated as createIndexes validates a
// spec. Turning unique also ends prepareUnique, as on mongod.
func (ch indexChange) apply(s *index.Spec) (*index.Spec, error) {
	drop := map[string]bool{
		"hidden":             ch.hidden != nil,
		"expireAfterSeconds": ch.expire.Type != 0,
		"unique":             ch.toUnique || ch.toNonUnique,
		"prepareUnique":      ch.prepare != nil || ch.toUnique,
	}
	b := bsoncore.NewDocumentBuilder()
	els, _ := s.Raw.Elements()
	for _, el := range els {
		if !drop[el.Key()] {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	if ch.hidden != nil && *ch.hidden {
		b.AppendBoolean("hidden", true)
	}
	if ch.expire.Type != 0 {
		b.AppendValue("expireAfterSeconds", ch.expire)
	}
	if ch.toUnique {
		b.AppendBoolean("unique", true)
	}
	if ch.prepare != nil && *ch.prepare {
		b.AppendBoolean("prepareUnique", true)
	}
	return index.ParseSpec(b.Build(), indexFilters)
}

// collModIndexPlan is a checked index change: the collection's specs with
// the changed one, and what the reply reports.
type collModIndexPlan struct {
	specs         []*index.Spec
	before, after *index.Spec
	change        indexChange
}

// check finds the index among a collection's specs and resolves the
// change against it with every rule of mongod's parse, before anything is
// read or written; mods counts the command's other modifications.
func (m *collModIndex) check(specs []*index.Spec, ns string, mods int) (int, indexChange, error) {
	i, err := m.find(specs, ns)
	if err != nil {
		return 0, indexChange{}, err
	}
	ch, err := m.resolve(specs[i])
	if err != nil {
		return 0, indexChange{}, err
	}
	if ch.prepare != nil && mods+m.count() > 1 {
		return 0, indexChange{}, mongoerr.New(mongoerr.InvalidOptions, "prepareUnique cannot be combined with any other modification.")
	}
	return i, ch, nil
}

// planCollModIndex checks the change (for unique: that no two documents
// share a key, unless pre, a snapshot found none, still shows the
// collection as it is) and returns the new specs; nothing is written.
func (r *request) planCollModIndex(tx *storage.Tx, info storage.CollectionInfo, m *collModIndex, mods int, pre *storage.Snapshot) (*collModIndexPlan, error) {
	specs, err := loadSpecs(info.Indexes)
	if err != nil {
		return nil, err
	}
	i, ch, err := m.check(specs, r.ns(info.Name), mods)
	if err != nil {
		return nil, err
	}
	if ch.toUnique && (pre == nil || !tx.Unchanged(pre, info.Name)) {
		if err := checkConvertible(r.ctx, tx, info.Name, specs[i].Name); err != nil {
			return nil, err
		}
	}
	after, err := ch.apply(specs[i])
	if err != nil {
		return nil, err
	}
	p := &collModIndexPlan{before: specs[i], after: after, change: ch}
	specs[i] = after
	p.specs = specs
	return p, nil
}

// scanForUnique checks a conversion to unique on a snapshot, without the
// branch's write lock (mongod too scans before it locks the collection
// exclusively): duplicates fail the command there, and the snapshot is
// returned so that the write need not scan again if nothing replaced the
// collection meanwhile. It returns nil when the command converts nothing
// or the collection is missing (the write then says so).
func (r *request) scanForUnique(coll string, m *collModIndex, mods int) (*storage.Snapshot, error) {
	if m == nil || m.unique == nil || !*m.unique {
		return nil, nil
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	info, ok := snap.Collection(coll)
	if !ok {
		return nil, nil
	}
	specs, err := loadSpecs(info.Indexes)
	if err != nil {
		return nil, err
	}
	i, ch, err := m.check(specs, r.ns(coll), mods)
	if err != nil || !ch.toUnique {
		return nil, err
	}
	return snap, checkConvertible(r.ctx, snap, coll, specs[i].Name)
}

// checkConvertible fails with CannotConvertIndexToUnique, listing the
// _id values of the documents that share a key, when index name of coll
// holds duplicates.
func checkConvertible(ctx context.Context, src storage.IndexReader, coll, name string) error {
	dups, err := storage.IndexDuplicates(ctx, src, coll, name)
	if err != nil || len(dups.Groups) == 0 {
		return err
	}
	violations := bsoncore.NewArrayBuilder()
	for _, g := range dups.Groups {
		ids := bsoncore.NewArrayBuilder()
		for _, id := range g {
			ids.AppendValue(id)
		}
		violations.AppendDocument(bsoncore.NewDocumentBuilder().AppendArray("ids", ids.Build()).Build())
	}
	msg := "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again."
	if dups.Truncated {
		msg = "Cannot convert the index to unique. Too many conflicting documents were detected. Please resolve them and rerun collMod."
	}
	info := bsoncore.NewDocumentBuilder().AppendArray("violations", violations.Build()).Build()
	return &mongoerr.Error{Code: mongoerr.CannotConvertIndexToUnique, Msg: msg, Info: info}
}

// reply reports each changed option's old and new values, as mongod does.
func (p *collModIndexPlan) reply() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	ch := p.change
	if ch.expire.Type != 0 {
		if p.before.ExpireAfter >= 0 {
			b.AppendInt64("expireAfterSeconds_old", p.before.ExpireAfter)
		}
		b.AppendInt64("expireAfterSeconds_new", p.after.ExpireAfter)
	}
	if ch.hidden != nil {
		b.AppendBoolean("hidden_old", p.before.Hidden).AppendBoolean("hidden_new", p.after.Hidden)
	}
	if ch.toUnique {
		b.AppendBoolean("unique_new", true)
	}
	if ch.prepare != nil {
		b.AppendBoolean("prepareUnique_old", p.before.PrepareUnique).AppendBoolean("prepareUnique_new", p.after.PrepareUnique)
	}
	if ch.toNonUnique {
		b.AppendBoolean("forceNonUnique_new", true)
	}
	return b.AppendDouble("ok", 1).Build()
}

// collModDryRun checks a conversion to unique without making it (dryRun:
// true), with mongod's rules: only unique: true, and nothing else.
func (r *request) collModDryRun(coll string, a *collModArgs) (bsoncore.Document, error) {
	if a.index == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an valid index modification.")
	}
	m, err := parseCollModIndex(a.index)
	if err != nil {
		return nil, err
	}
	if m.unique == nil || !*m.unique {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an index modification with unique: true.")
	}
	// A snapshot: a dry run writes nothing and waits for no writer.
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	info, ok := snap.Collection(coll)
	if !ok {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
	}
	specs, err := loadSpecs(info.Indexes)
	if err != nil {
		return nil, err
	}
	i, ch, err := m.check(specs, r.ns(coll), a.mods)
	if err != nil {
		return nil, err
	}
	if a.mods+m.count() > 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "unique: true cannot be combined with any other modification in dry run mode.")
	}
	if ch.toUnique {
		if err := checkConvertible(r.ctx, snap, coll, specs[i].Name); err != nil {
			return nil, err
		}
	}
	return okReply(), nil
}

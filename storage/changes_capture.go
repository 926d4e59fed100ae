package storage

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Capturing change events (docs/format/changes.md): a transaction notes
// each change with the documents before and after it; its entry waits in
// the database's queue until its log record is durable, and is then
// finished (update descriptions computed, images dropped where the
// collection keeps none) and appended to the change log.

// changeQueue holds a database's entries whose log records are not yet
// durable or whose writers have not published them yet, in LSN order.
// A record that may carry events reserves its place when it is appended
// to the log (appendRecord), so that an entry never reaches the change
// log before one of a lower LSN: recovery rebuilds only what lies above
// a database's highest logged LSN.
type changeQueue struct {
	mu      sync.Mutex
	pending []queuedEntry
	// flushMu keeps flushes of one database in order while they write
	// the change log without holding mu (writers reserve under mu).
	flushMu sync.Mutex
}

// queuedEntry is an entry, or the place reserved for one (reserved:
// its writer has not published it yet).
type queuedEntry struct {
	ChangeEntry
	reserved bool
	reuse    bool // a plain write's: its events' slice is reused once appended
}

// noteDoc records a document change. old is nil for an insert, doc nil
// for a delete; update says an update operator (not a replacement) made
// it.
func (tx *Tx) noteDoc(c *collection, key []byte, old, doc []byte, update bool) {
	if !tx.capture {
		return
	}
	ev := ChangeEvent{Coll: c.info.Name, UUID: c.info.UUID, Pre: old, Doc: doc, images: keepsImages(c.info)}
	switch {
	case old == nil:
		ev.Op = "insert"
	case doc == nil:
		ev.Op = "delete"
	case update:
		ev.Op = "update"
	default:
		ev.Op = "replace"
	}
	ev.key = key
	tx.events = append(tx.events, ev)
}

// noteCatalog records a collection event.
func (tx *Tx) noteCatalog(op string, info CollectionInfo, to string, desc bsoncore.Document) {
	if tx.capture {
		tx.events = append(tx.events, ChangeEvent{Op: op, Coll: info.Name, UUID: info.UUID, To: to, Desc: desc})
	}
}

// noteMeta records what replacing a catalog entry changed: indexes made or
// dropped, or index options or collection options modified.
func (tx *Tx) noteMeta(before, after CollectionInfo) {
	if !tx.capture {
		return
	}
	added, dropped, modified := indexChanges(before.Indexes, after.Indexes)
	if len(added) > 0 {
		tx.noteCatalog("createIndexes", after, "", specList(added))
	}
	if len(dropped) > 0 {
		tx.noteCatalog("dropIndexes", after, "", specList(dropped))
	}
	for _, m := range modified {
		tx.noteCatalog("modify", after, "", bsoncore.NewDocumentBuilder().AppendDocument("index", m).Build())
	}
	if !bytes.Equal(before.Options, after.Options) { // replay of SetOptions: the options it set
		tx.events = append(tx.events, ChangeEvent{Op: "modify", Coll: after.Name, UUID: after.UUID, Desc: after.Options,
			Before: bsoncore.NewDocumentBuilder().AppendDocument("collectionOptions", optionsWithUUID(before)).Build()})
	}
}

func specList(specs []bsoncore.Document) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for _, s := range specs {
		arr.AppendDocument(s)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("indexes", arr.Build()).Build()
}

// indexChanges compares index lists by name.
func indexChanges(before, after []bsoncore.Document) (added, dropped, modified []bsoncore.Document) {
	byName := func(specs []bsoncore.Document) map[string]bsoncore.Document {
		m := map[string]bsoncore.Document{}
		for _, s := range specs {
			m[s.Lookup("name").StringValue()] = s
		}
		return m
	}
	old, cur := byName(before), byName(after)
	for _, s := range after {
		o, ok := old[s.Lookup("name").StringValue()]
		switch {
		case !ok:
			added = append(added, s)
		case !bytes.Equal(o, s):
			modified = append(modified, s)
		}
	}
	for _, s := range before {
		if _, ok := cur[s.Lookup("name").StringValue()]; !ok {
			dropped = append(dropped, s)
		}
	}
	return added, dropped, modified
}

// keepsImages reports whether a collection keeps pre- and post-images
// (changeStreamPreAndPostImages: {enabled: true}).
func keepsImages(info CollectionInfo) bool {
	d, ok := info.Options.Lookup("changeStreamPreAndPostImages").DocumentOK()
	if !ok {
		return false
	}
	on, ok := d.Lookup("enabled").BooleanOK()
	return ok && on
}

// queueChanges adds the entry of a published transaction whose record is
// lsn (it may not be durable yet).
func (d *Database) queueChanges(b *branch, lsn, at uint64, tx *Tx) {
	d.queueEntry(ChangeEntry{At: at, Wall: time.Now(), DB: d.name, Branch: b.name, LSN: lsn,
		Events: tx.events, Txn: txnOf(tx.retry)}, tx.plain)
	tx.queued = true
}

// queueEntry fills the place reserved for e.LSN (an entry without events
// just frees it), or, during replay, adds e in LSN order. reuse says e is
// a plain write's, whose events' slice is reused once appended.
func (d *Database) queueEntry(e ChangeEntry, reuse bool) {
	q := &d.changes
	q.mu.Lock()
	defer q.mu.Unlock()
	i, found := slices.BinarySearchFunc(q.pending, e.LSN, func(x queuedEntry, lsn uint64) int { return cmp.Compare(x.LSN, lsn) })
	switch {
	case found && len(e.Events) == 0:
		q.pending = slices.Delete(q.pending, i, i+1)
	case found:
		q.pending[i] = queuedEntry{ChangeEntry: e, reuse: reuse}
	case len(e.Events) > 0:
		q.pending = slices.Insert(q.pending, i, queuedEntry{ChangeEntry: e, reuse: reuse})
	}
}

// appendRecord appends a log record that may carry change events and
// reserves its entry's place in the queue, atomically with the append.
func (d *Database) appendRecord(payload []byte) (uint64, error) {
	lsn, err := d.reserveAndAppend(payload)
	if err == nil {
		d.engine.dbStats.logged(payload)
	}
	return lsn, err
}

func (d *Database) reserveAndAppend(payload []byte) (uint64, error) {
	if d.engine.changes == nil {
		return d.wl.Append(payload)
	}
	q := &d.changes
	q.mu.Lock()
	defer q.mu.Unlock()
	lsn, err := d.wl.Append(payload)
	if err == nil {
		q.pending = append(q.pending, queuedEntry{ChangeEntry: ChangeEntry{LSN: lsn}, reserved: true})
	}
	return lsn, err
}

// cancelReserved frees the place of a record whose write will never be
// published (a transaction over several databases that did not commit).
func (d *Database) cancelReserved(lsn uint64) {
	q := &d.changes
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = slices.DeleteFunc(q.pending, func(e queuedEntry) bool { return e.reserved && e.LSN == lsn })
}

// txnOf names the transaction of a commit's record (its outcomes hold
// stmtId -1), nil for other writes.
func txnOf(r *retryLog) *ChangeTxn {
	if r == nil || !slices.Contains(r.stmts, TxnCommitStmt) {
		return nil
	}
	return &ChangeTxn{Session: r.session, Number: r.txn}
}

// flushChanges appends the queued entries whose records are durable.
func (d *Database) flushChanges() {
	l := d.engine.changes
	wl := d.wl
	if l == nil || wl == nil {
		return
	}
	q := &d.changes
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	durable := wl.Durable()
	q.mu.Lock()
	n := 0
	for n < len(q.pending) && q.pending[n].LSN <= durable && !q.pending[n].reserved {
		n++
	}
	ready := make([]ChangeEntry, n)
	var reused [][]ChangeEvent
	for i := range ready {
		ready[i] = q.pending[i].ChangeEntry
		if q.pending[i].reuse {
			reused = append(reused, ready[i].Events)
		}
	}
	q.pending = slices.Delete(q.pending, 0, n)
	q.mu.Unlock()
	if n == 0 {
		return
	}
	for i := range ready {
		finishEvents(ready[i].Events)
	}
	if err := l.append(ready); err != nil {
		d.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("appending to the change log failed")
	}
	for _, evs := range reused { // encoded: nothing holds them now
		eventsPool.put(evs)
	}
}

// dropLostChanges forgets queued entries a failed log write lost.
func (d *Database) dropLostChanges(durable uint64) {
	q := &d.changes
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = slices.DeleteFunc(q.pending, func(e queuedEntry) bool { return e.LSN > durable })
}

// settleChanges makes every record d has logged durable and appends the
// events queued for them, so that entries appended after it (the drop of
// d) follow them: writes acknowledged before they were durable (w: 0,
// j: false) would otherwise have their events after the drop. A record
// the log lost has no event to come, so its error does not matter here.
func (d *Database) settleChanges() {
	if d.engine.changes == nil || d.wl == nil {
		return
	}
	_ = d.wl.WaitDurable(d.wl.LastLSN())
	d.flushChanges()
}

// syncChanges makes the change log durable up to every durable record of
// d, before a checkpoint lets the write-ahead log drop them.
func (d *Database) syncChanges() error {
	if d.engine.changes == nil {
		return nil
	}
	d.flushChanges()
	return d.engine.changes.Sync()
}

// finishEvents computes update descriptions and drops the images the
// collections do not keep.
func finishEvents(evs []ChangeEvent) {
	for i := range evs {
		ev := &evs[i]
		if ev.key != nil {
			ev.Key = documentKey(ev.Pre, ev.Doc)
			ev.key = nil
		}
		if ev.Op == "update" {
			ev.Update = UpdateDescription(ev.Pre, ev.Doc)
			if !ev.images {
				ev.Doc = nil
			}
		}
		if !ev.images {
			ev.Pre = nil
		}
	}
}

// documentKey is {_id: ...} of a changed document.
func documentKey(old, doc bsoncore.Document) bsoncore.Document {
	src := doc
	if src == nil {
		src = old
	}
	id, err := src.LookupErr("_id")
	if err != nil {
		return nil
	}
	// One allocation of the exact size: a builder took three for each
	// event, 3% of the server's CPU in Raw/InsertMany.
	i, key := bsoncore.AppendDocumentStart(make([]byte, 0, 4+1+4+len(id.Data)+1))
	key = bsoncore.AppendValueElement(key, "_id", id)
	key, _ = bsoncore.AppendDocumentEnd(key, i)
	return key
}

// UpdateDescription is a change stream's updateDescription of the change
// from a to b, as mongod computes it for a pipeline update: updatedFields
// (dotted paths, array elements by index), removedFields, truncatedArrays
// and disambiguatedPaths (the paths whose dotted form is ambiguous: a
// field name that looks like an array index or holds a dot).
func UpdateDescription(a, b bsoncore.Document) bsoncore.Document {
	u := updateDiff{updated: bsoncore.NewDocumentBuilder(), ambiguous: bsoncore.NewDocumentBuilder()}
	u.diffDoc(nil, a, b)
	removed := bsoncore.NewArrayBuilder()
	for _, p := range u.removed {
		removed.AppendString(p)
	}
	truncated := bsoncore.NewArrayBuilder()
	for _, t := range u.truncated {
		truncated.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("field", t.field).AppendInt32("newSize", t.size).Build())
	}
	return bsoncore.NewDocumentBuilder().
		AppendDocument("updatedFields", u.updated.Build()).
		AppendArray("removedFields", removed.Build()).
		AppendArray("truncatedArrays", truncated.Build()).
		AppendDocument("disambiguatedPaths", u.ambiguous.Build()).
		Build()
}

type updateDiff struct {
	updated   *bsoncore.DocumentBuilder
	ambiguous *bsoncore.DocumentBuilder
	removed   []string
	truncated []struct {
		field string
		size  int32
	}
}

// pathPart is one step of a path: a field name, or an array index.
type pathPart struct {
	name  string
	index int
	isIdx bool
}

func dotted(parts []pathPart) string {
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte('.')
		}
		if p.isIdx {
			sb.WriteString(strconv.Itoa(p.index))
		} else {
			sb.WriteString(p.name)
		}
	}
	return sb.String()
}

// note names a changed path, recording its parts when it is ambiguous.
func (u *updateDiff) note(parts []pathPart) string {
	path := dotted(parts)
	for i, p := range parts {
		if !p.isIdx && (strings.Contains(p.name, ".") || (i > 0 && numericName(p.name))) {
			arr := bsoncore.NewArrayBuilder()
			for _, q := range parts {
				if q.isIdx {
					arr.AppendInt32(int32(q.index))
				} else {
					arr.AppendString(q.name)
				}
			}
			u.ambiguous.AppendArray(path, arr.Build())
			break
		}
	}
	return path
}

func numericName(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func with(parts []pathPart, p pathPart) []pathPart {
	return append(parts[:len(parts):len(parts)], p)
}

func (u *updateDiff) diffDoc(parts []pathPart, a, b bsoncore.Document) {
	if bytes.Equal(a, b) {
		return
	}
	olds, _ := a.Elements()
	news, _ := b.Elements()
	// Fields mostly keep their places: each is compared with the field at
	// its position, and looked up by name (in a map, built once) only when
	// that one has another name. A look-up per field made a one-field
	// update of a document of 8,000 fields take seconds.
	var oldByKey map[string]bsoncore.Value
	for i, el := range news {
		key := el.Key()
		p := with(parts, pathPart{name: key})
		if i < len(olds) && olds[i].Key() == key {
			u.diffValue(p, olds[i].Value(), el.Value())
			continue
		}
		if oldByKey == nil {
			oldByKey = valuesByKey(olds)
		}
		if old, ok := oldByKey[key]; ok {
			u.diffValue(p, old, el.Value())
		} else {
			u.updated.AppendValue(u.note(p), el.Value())
		}
	}
	var newByKey map[string]bsoncore.Value
	for i, el := range olds {
		if i < len(news) && news[i].Key() == el.Key() {
			continue
		}
		if newByKey == nil {
			newByKey = valuesByKey(news)
		}
		if _, ok := newByKey[el.Key()]; !ok {
			u.removed = append(u.removed, u.note(with(parts, pathPart{name: el.Key()})))
		}
	}
}

// valuesByKey maps each field name to its first value, as a look-up finds
// it.
func valuesByKey(els []bsoncore.Element) map[string]bsoncore.Value {
	m := make(map[string]bsoncore.Value, len(els))
	for _, el := range els {
		if _, dup := m[el.Key()]; !dup {
			m[el.Key()] = el.Value()
		}
	}
	return m
}

func (u *updateDiff) diffValue(parts []pathPart, a, b bsoncore.Value) {
	switch {
	case a.Type == b.Type && bytes.Equal(a.Data, b.Data):
	case a.Type == bsoncore.TypeEmbeddedDocument && b.Type == bsoncore.TypeEmbeddedDocument:
		u.diffDoc(parts, a.Document(), b.Document())
	case a.Type == bsoncore.TypeArray && b.Type == bsoncore.TypeArray:
		u.diffArray(parts, a.Array(), b.Array())
	default:
		u.updated.AppendValue(u.note(parts), b)
	}
}

func (u *updateDiff) diffArray(parts []pathPart, a, b bsoncore.Array) {
	av, _ := a.Values()
	bv, _ := b.Values()
	if len(bv) < len(av) {
		u.truncated = append(u.truncated, struct {
			field string
			size  int32
		}{u.note(parts), int32(len(bv))})
	}
	for i, v := range bv {
		p := with(parts, pathPart{index: i, isIdx: true})
		if i >= len(av) {
			u.updated.AppendValue(u.note(p), v)
			continue
		}
		u.diffValue(p, av[i], v)
	}
}

// emitEntry appends an entry that does not come from the log (a
// version-control operation, dropDatabase) and syncs the log, so that it
// is durable before the operation answers.
func (e *Engine) emitEntry(db, branch string, evs []ChangeEvent) error {
	return e.emitEntries(db, branch, evs)
}

// emitEntries is emitEntry for several entries at once: one append, one
// sync (empty groups are left out).
func (e *Engine) emitEntries(db, branch string, groups ...[]ChangeEvent) error {
	if e.changes == nil {
		return nil
	}
	at, _ := e.now()
	var entries []ChangeEntry
	for _, evs := range groups {
		if len(evs) > 0 {
			finishEvents(evs)
			entries = append(entries, ChangeEntry{At: at, Wall: time.Now(), DB: db, Branch: branch, Events: evs})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	if err := e.changes.append(entries); err != nil {
		return err
	}
	return e.changes.Sync()
}

// emitStateChange appends the document and collection events that moving
// b from state a to state b2 causes (a merge, reset, cherry-pick, revert
// or rebase), so that a change stream's reader stays right across it.
func (d *Database) emitStateChange(ctx context.Context, b *branch, a, b2 *rootState) error {
	if d.engine.changes == nil {
		return nil
	}
	diffs, err := d.diffStates(ctx, a, b2, "", false)
	if err != nil {
		return err
	}
	var evs []ChangeEvent
	for _, cd := range diffs {
		more, err := d.stateEvents(ctx, a, b2, cd)
		if err != nil {
			return err
		}
		evs = append(evs, more...)
	}
	return d.engine.emitEntry(d.name, b.name, evs)
}

// stateEvents are one collection's events of a state change.
func (d *Database) stateEvents(ctx context.Context, a, b *rootState, cd CollectionDiff) ([]ChangeEvent, error) {
	var evs []ChangeEvent
	switch cd.Status {
	case "dropped":
		return []ChangeEvent{{Op: "drop", Coll: cd.Name, UUID: a.colls.get(cd.Name).info.UUID}}, nil
	case "added":
		info := b.colls.get(cd.Name).info
		evs = append(evs, ChangeEvent{Op: "create", Coll: cd.Name, UUID: info.UUID})
	}
	c := b.colls.get(cd.Name)
	for _, ch := range cd.Added {
		evs = append(evs, ChangeEvent{Op: "insert", Coll: cd.Name, UUID: c.info.UUID, Doc: ch.To, key: []byte{1}})
	}
	for _, ch := range cd.Removed {
		evs = append(evs, ChangeEvent{Op: "delete", Coll: cd.Name, UUID: c.info.UUID, Pre: ch.From, key: []byte{1}})
	}
	for _, ch := range cd.Modified {
		key := encodeID(ch.ID)
		doc, _, err := lookup(ctx, d.ns, c.base, c.edits, key)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ChangeEvent{Op: "replace", Coll: cd.Name, UUID: c.info.UUID,
			Doc: append(bsoncore.Document(nil), doc...), key: []byte{1}})
	}
	return evs, nil
}

// logStateChange is emitStateChange for an operation that has happened:
// a failure is logged, not returned.
func (d *Database) logStateChange(ctx context.Context, b *branch, a, b2 *rootState) {
	if err := d.emitStateChange(ctx, b, a, b2); err != nil {
		d.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("appending to the change log failed")
	}
}

// EmitVersionEvent appends a DumboDB version-control event (dumboCommit,
// dumboBranch, ...) with its description, durably.
func (d *Database) EmitVersionEvent(branch, op string, desc bsoncore.Document) {
	_, leave, _ := d.engine.gate.enter(context.Background()) // waits while frozen
	defer leave()
	if err := d.engine.emitEntry(d.name, branch, []ChangeEvent{{Op: op, Desc: desc}}); err != nil {
		d.log.Error().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("appending to the change log failed")
	}
}

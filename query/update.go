package query

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Update is a compiled update: a replacement document or a list of
// modifier operations sorted by path.
type Update struct {
	replacement   bsoncore.Document
	isRepl        bool
	ops           []*updateOp
	pipeline      []docTransform // pipeline-style update
	env           *Env
	query         *Filter                 // for positional "$"
	arrayFilters  map[string]*arrayFilter // by identifier
	hasPositional bool
}

// UpdateOptions are the update command's options that shape an update.
type UpdateOptions struct {
	Env          *Env
	Query        *Filter // the statement's filter, which "$" refers to
	ArrayFilters []bsoncore.Document
}

// updateOp is one modifier applied to one path.
type updateOp struct {
	mod   *modifier
	path  string
	parts []string
	arg   bsoncore.Value
	push  *pushSpec                 // $push
	each  []bsoncore.Value          // $addToSet values
	pull  func(bsoncore.Value) bool // $pull condition
	from  *updateOp                 // $rename target: the source half
	env   *Env
	// positional: the path has $, $[] or $[id] components, resolved per
	// document by expandPaths.
	positional bool
}

// CompileUpdate validates an update without options.
func CompileUpdate(update bsoncore.Value) (*Update, error) {
	return CompileUpdateOpts(update, UpdateOptions{})
}

// CompileUpdateOpts validates an update: a modifier document, a
// replacement document, or an aggregation pipeline.
func CompileUpdateOpts(update bsoncore.Value, opts UpdateOptions) (*Update, error) {
	afs, err := compileArrayFilters(opts.ArrayFilters, opts.Env)
	if err != nil {
		return nil, err
	}
	switch update.Type {
	case bsoncore.TypeArray:
		if len(afs) > 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "arrayFilters may not be specified for pipeline-style updates")
		}
		return compileUpdatePipeline(update.Data, opts.Env)
	case bsoncore.TypeEmbeddedDocument:
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Update argument must be either an object or an array")
	}
	doc := bsoncore.Document(update.Data)
	if err := doc.Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid update: %v", err)
	}
	if k := value.FirstKey(doc); k == "" || k[0] != '$' {
		if len(afs) > 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "The array filter for identifier '%s' was not used in the update %s", value.FirstKey(opts.ArrayFilters[0]), value.Format(update))
		}
		return compileReplacement(doc)
	}
	u := &Update{env: opts.Env, query: opts.Query, arrayFilters: afs}
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if err := u.addModifier(string(k), v); err != nil {
			return nil, err
		}
	}
	if err := checkConflicts(u.ops); err != nil {
		return nil, err
	}
	if err := u.checkArrayFiltersUsed(update); err != nil {
		return nil, err
	}
	// mongod (5.0+) applies modifiers in path order, so new fields are
	// appended in lexicographic (numeric for numeric names) order.
	sort.SliceStable(u.ops, func(i, j int) bool { return comparePaths(u.ops[i].parts, u.ops[j].parts) < 0 })
	return u, nil
}

func compileReplacement(doc bsoncore.Document) (*Update, error) {
	it := value.NewIter(doc)
	for {
		k, _, ok := it.Next()
		if !ok {
			return &Update{replacement: doc, isRepl: true}, nil
		}
		if len(k) > 0 && k[0] == '$' {
			return nil, mongoerr.New(mongoerr.DollarPrefixedFieldName, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", k, k)
		}
	}
}

func (u *Update) addModifier(name string, fields bsoncore.Value) error {
	mod, ok := modifiers[name]
	if !ok {
		return mongoerr.New(mongoerr.FailedToParse, "Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", name)
	}
	if fields.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.FailedToParse, "Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s}", value.TypeName(fields.Type), value.FormatElem(name, fields))
	}
	it := value.NewIter(fields.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		path := string(k)
		if err := validateUpdatePath(path); err != nil {
			return err
		}
		op := &updateOp{mod: mod, path: path, parts: value.SplitPath(path), arg: v, env: u.env}
		var err error
		if op.positional, err = u.checkPositionalPath(path, op.parts); err != nil {
			return err
		}
		u.hasPositional = u.hasPositional || op.positional
		if op.positional && name == "$rename" {
			return mongoerr.New(mongoerr.BadValue, "The source field for $rename may not be dynamic: %s", path)
		}
		if err := mod.parse(op); err != nil {
			return err
		}
		u.ops = append(u.ops, op)
		if op.from != nil {
			u.ops = append(u.ops, op.from)
		}
	}
}

func validateUpdatePath(path string) error {
	if path == "" {
		return mongoerr.New(mongoerr.EmptyFieldName, "An empty update path is not valid.")
	}
	for _, p := range value.SplitPath(path) {
		if p == "" {
			return mongoerr.New(mongoerr.EmptyFieldName, "The update path '%s' contains an empty field name, which is not allowed.", path)
		}
	}
	return nil
}

// checkConflicts rejects two operations on the same path or on a path and
// one of its prefixes, as mongod's update tree does.
func checkConflicts(ops []*updateOp) error {
	for j := range ops {
		for i := 0; i < j; i++ {
			a, b := ops[i], ops[j]
			short := a
			if len(b.parts) < len(a.parts) {
				short = b
			}
			if isPrefix(short.parts, a.parts) && isPrefix(short.parts, b.parts) {
				return mongoerr.New(mongoerr.ConflictingUpdateOperators, "Updating the path '%s' would create a conflict at '%s'", b.path, short.path)
			}
		}
	}
	return nil
}

func isPrefix(prefix, parts []string) bool {
	if len(prefix) > len(parts) {
		return false
	}
	for i, p := range prefix {
		if parts[i] != p {
			return false
		}
	}
	return true
}

// comparePaths orders paths component-wise; numeric names numerically.
func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, xNum := value.ParseIndex(a[i])
		y, yNum := value.ParseIndex(b[i])
		c := 0
		if xNum && yNum {
			c = value.CmpInt(x, y)
		} else {
			c = strings.Compare(a[i], b[i])
		}
		if c != 0 {
			return c
		}
	}
	return value.CmpInt(len(a), len(b))
}

// IsReplacement reports whether the update replaces whole documents.
func (u *Update) IsReplacement() bool { return u.isRepl }

// applyCtx is the per-document state of one Apply call.
type applyCtx struct {
	root     *mnode
	original bsoncore.Document
	isInsert bool
	idText   string                     // "{_id: 1}" for error messages
	renamed  map[*updateOp]renameSource // $rename sources captured before applying
	// applied lists the concrete paths written so far when the update has
	// positional paths, whose overlaps only show once resolved.
	applied [][]string
}

// Apply applies the update to doc, returning the new document and whether
// it differs from doc. isInsert enables $setOnInsert (upserts).
func (u *Update) Apply(doc bsoncore.Document, isInsert bool) (bsoncore.Document, bool, error) {
	switch {
	case u.isRepl:
		return u.applyReplacement(doc, isInsert)
	case u.pipeline != nil:
		return u.applyPipeline(doc, isInsert)
	}
	c := &applyCtx{root: leafM(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}), original: doc, isInsert: isInsert}
	c.idText = "{}"
	if id, ok := value.LookupField(doc, "_id"); ok {
		c.idText = "{" + value.FormatElem("_id", id) + "}"
	}
	for _, op := range u.ops {
		if op.from != nil {
			if c.renamed == nil {
				c.renamed = map[*updateOp]renameSource{}
			}
			c.renamed[op] = c.findRenameSource(op.from.parts)
		}
	}
	for _, op := range u.ops {
		if err := u.applyOp(c, op); err != nil {
			return nil, false, err
		}
	}
	out := bsoncore.Document(c.root.value().Data)
	if !isInsert {
		if err := checkIDUnchanged(doc, out); err != nil {
			return nil, false, err
		}
		if err := checkTopDollarFields(doc, out); err != nil {
			return nil, false, err
		}
	}
	return out, !bytes.Equal(out, doc), nil
}

// applyOp runs one modifier, once per concrete path when positional.
func (u *Update) applyOp(c *applyCtx, op *updateOp) error {
	if !u.hasPositional {
		return op.mod.apply(c, op)
	}
	if !op.positional {
		if err := c.checkResolvedConflict(op.parts); err != nil {
			return err
		}
		return op.mod.apply(c, op)
	}
	paths, err := c.expandPaths(u, op)
	if err != nil {
		return err
	}
	for _, parts := range paths {
		if err := c.checkResolvedConflict(parts); err != nil {
			return err
		}
		concrete := *op
		concrete.parts, concrete.path = parts, strings.Join(parts, ".")
		if err := op.mod.apply(c, &concrete); err != nil {
			return err
		}
	}
	return nil
}

// checkResolvedConflict rejects a path overlapping one already written by
// this update (possible only once positional paths are resolved).
func (c *applyCtx) checkResolvedConflict(parts []string) error {
	for _, prev := range c.applied {
		if isPrefix(prev, parts) || isPrefix(parts, prev) {
			return mongoerr.New(mongoerr.ConflictingUpdateOperators, "Update created a conflict at '%s'", strings.Join(parts, "."))
		}
	}
	c.applied = append(c.applied, parts)
	return nil
}

func checkIDUnchanged(before, after bsoncore.Document) error {
	a, hadID := value.LookupField(before, "_id")
	b, hasID := value.LookupField(after, "_id")
	if hadID && (!hasID || !value.Same(a, b)) {
		return mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'")
	}
	return nil
}

// checkTopDollarFields refuses an update of an existing document that
// writes a top-level field named with a "$", as mongod validates the
// fields a modifier changes: an upsert's insert may create one, and a
// nested one ("a.$b") is a field like any other (MongoDB 5.0+).
func checkTopDollarFields(before, after bsoncore.Document) error {
	it := value.NewIter(after)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		if len(k) == 0 || k[0] != '$' {
			continue
		}
		if old, had := value.LookupField(before, string(k)); !had || !value.Same(old, v) {
			return mongoerr.New(mongoerr.DollarPrefixedFieldName, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", k, k)
		}
	}
}

// applyReplacement swaps the document for the replacement, keeping _id.
func (u *Update) applyReplacement(doc bsoncore.Document, isInsert bool) (bsoncore.Document, bool, error) {
	oldID, hadID := value.LookupField(doc, "_id")
	newID, hasID := value.LookupField(u.replacement, "_id")
	switch {
	case hasID && hadID && !isInsert && !value.Same(oldID, newID):
		return nil, false, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to %s", value.FormatElem("_id", newID))
	case hasID || !hadID:
		out := u.replacement
		return out, !bytes.Equal(out, doc), nil
	}
	out := prependID(oldID, u.replacement)
	return out, !bytes.Equal(out, doc), nil
}

// prependID returns doc with an _id field placed first.
func prependID(id bsoncore.Value, doc bsoncore.Document) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+len(id.Data)+8))
	dst = bsoncore.AppendValueElement(dst, "_id", id)
	dst = append(dst, doc[4:len(doc)-1]...)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// Upsert builds the document an upsert inserts: the filter's equality
// fields (with _id first), then the update applied as an insert. A
// replacement is inserted as is, with the filter's _id if it has none.
func Upsert(f *Filter, u *Update) (bsoncore.Document, error) {
	if u.isRepl {
		if id, ok := f.IDEquality(); ok {
			if _, has := value.LookupField(u.replacement, "_id"); !has {
				return prependID(id, u.replacement), nil
			}
		}
		return u.replacement, nil
	}
	seed, err := seedFromFilter(f)
	if err != nil {
		return nil, err
	}
	out, _, err := u.Apply(seed, true)
	return out, err
}

func seedFromFilter(f *Filter) (bsoncore.Document, error) {
	eqs := f.EqualityFields()
	for j := range eqs {
		for i := 0; i < j; i++ {
			a, b := value.SplitPath(eqs[i].Path), value.SplitPath(eqs[j].Path)
			if len(a) == len(b) && isPrefix(a, b) {
				return nil, mongoerr.New(mongoerr.NotSingleValueField, "cannot infer query fields to set, path '%s' is matched twice", eqs[i].Path)
			}
			if isPrefix(a, b) || isPrefix(b, a) {
				return nil, mongoerr.New(mongoerr.NotSingleValueField, "cannot infer query fields to set, both paths '%s' and '%s' are matched", eqs[j].Path, eqs[i].Path)
			}
		}
	}
	root := newDocM()
	if id, ok := f.IDEquality(); ok {
		root.setChild("_id", leafM(id))
	}
	for _, e := range eqs {
		if e.Path == "_id" || strings.Contains(e.Path, "$") {
			continue
		}
		parts := value.SplitPath(e.Path)
		parent, err := navigate(root, parts, true)
		if err != nil {
			return nil, err
		}
		parent.setChild(parts[len(parts)-1], leafM(e.Value))
	}
	return root.value().Data, nil
}

// TopFields names the top-level fields the update reads or writes, so
// that it can be applied to a document holding only those fields (and
// _id) with the same result for them. ok is false for a replacement, a
// pipeline, and a positional "$" path, whose element depends on what the
// filter matched.
func (u *Update) TopFields() (names []string, ok bool) {
	if u.isRepl || u.pipeline != nil {
		return nil, false
	}
	for _, op := range u.ops {
		for _, o := range []*updateOp{op, op.from} {
			if o == nil {
				continue
			}
			if slices.Contains(o.parts, "$") {
				return nil, false
			}
			if !slices.Contains(names, o.parts[0]) {
				names = append(names, o.parts[0])
			}
		}
	}
	return names, true
}

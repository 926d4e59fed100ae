package plan

import (
	"strings"

	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A read set is the list of dotted paths a query step reads; nil means it
// needs whole documents. Scans of documents stored as doctrees read only
// these paths (storage.Iterator.SetFields), so a query over large
// documents does not load what it does not look at.

// pathSet collects paths; whole records that some part needs everything.
type pathSet struct {
	paths []string
	whole bool
}

func (s *pathSet) add(p string) {
	if p == "" {
		s.whole = true
		return
	}
	s.paths = append(s.paths, p)
}

// list returns the paths (with _id), or nil when whole documents are needed.
func (s *pathSet) list() []string {
	if s.whole {
		return nil
	}
	return append([]string{"_id"}, s.paths...)
}

// addFilter adds the paths a query filter reads.
func (s *pathSet) addFilter(f bsoncore.Document) {
	els, err := f.Elements()
	if err != nil {
		s.whole = true
		return
	}
	for _, el := range els {
		switch k := el.Key(); {
		case k == "$and" || k == "$or" || k == "$nor":
			vals, _ := el.Value().Array().Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok {
					s.addFilter(d)
				} else {
					s.whole = true
				}
			}
		case k == "$comment":
		case strings.HasPrefix(k, "$"): // $expr, $where, $text, $jsonSchema, ...
			s.whole = true
		default:
			s.add(k)
		}
	}
}

// addSort adds the paths a sort specification reads.
func (s *pathSet) addSort(sortDoc bsoncore.Document) {
	els, _ := sortDoc.Elements()
	for _, el := range els {
		if el.Value().Type == bsoncore.TypeEmbeddedDocument || el.Key() == "$natural" {
			s.whole = s.whole || el.Key() != "$natural" // {$meta: ...}
			continue
		}
		s.add(el.Key())
	}
}

// addProjection adds the paths an inclusion projection keeps; anything
// else (exclusion, expressions, $meta) needs whole documents.
func (s *pathSet) addProjection(proj bsoncore.Document) {
	els, _ := proj.Elements()
	for _, el := range els {
		k, v := el.Key(), el.Value()
		if d, ok := v.DocumentOK(); ok {
			// {$elemMatch} is an inclusion; {$slice} alone keeps every
			// other field too.
			if op, err := d.IndexErr(0); err == nil && op.Key() == "$elemMatch" {
				s.add(k)
				continue
			}
			s.whole = true
			continue
		}
		if n, ok := query.ProjectionFlag(v); !ok || (!n && k != "_id") {
			s.whole = true
			continue
		}
		s.add(strings.TrimSuffix(k, ".$"))
	}
}

// addExpression adds the field paths an aggregation expression (or stage
// specification) references; variables other than user ones and the
// operators that name fields by string need whole documents.
func (s *pathSet) addExpression(v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeString:
		str := v.StringValue()
		switch {
		case strings.HasPrefix(str, "$$ROOT") || strings.HasPrefix(str, "$$CURRENT"):
			s.whole = true
		case strings.HasPrefix(str, "$$"):
		case strings.HasPrefix(str, "$"):
			s.add(str[1:])
		}
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		els, _ := bsoncore.Document(v.Data).Elements()
		for _, el := range els {
			switch el.Key() {
			case "$getField", "$setField", "$unsetField", "$function", "$accumulator", "$literal":
				s.whole = s.whole || el.Key() != "$literal"
				continue
			case "sortBy": // $topN, $bottomN, $top, $bottom name fields without "$"
				if d, ok := el.Value().DocumentOK(); ok {
					s.addSort(d)
				}
			}
			s.addExpression(el.Value())
		}
	}
}

// PipelineReads returns the paths a pipeline reads from its input, or nil
// when it needs whole documents: only a pipeline that narrows documents
// (with $project, $group, $count, ...) after stages that only filter and
// order them can say.
func PipelineReads(stages []bsoncore.Document) []string {
	var s pathSet
	for _, st := range stages {
		el, err := st.IndexErr(0)
		if err != nil {
			return nil
		}
		v := el.Value()
		switch el.Key() {
		case "$match":
			s.addFilter(v.Document())
		case "$sort":
			s.addSort(v.Document())
		case "$limit", "$skip":
		case "$project":
			if !projectionNarrows(v.Document()) {
				return nil
			}
			s.addProjectStage(v.Document())
			return s.list()
		case "$group", "$count", "$sortByCount", "$bucket", "$bucketAuto":
			s.addExpression(v)
			return s.list()
		default:
			return nil
		}
		if s.whole {
			return nil
		}
	}
	return nil
}

// projectionNarrows reports whether a $project stage keeps only what it
// names (an inclusion, or computed fields), not everything but some.
func projectionNarrows(proj bsoncore.Document) bool {
	els, _ := proj.Elements()
	for _, el := range els {
		if n, ok := query.ProjectionFlag(el.Value()); ok && !n && el.Key() != "_id" {
			return false
		}
	}
	return true
}

func (s *pathSet) addProjectStage(proj bsoncore.Document) {
	els, _ := proj.Elements()
	for _, el := range els {
		if _, ok := query.ProjectionFlag(el.Value()); ok {
			s.add(el.Key())
			continue
		}
		s.addExpression(el.Value())
		if d, ok := el.Value().DocumentOK(); ok {
			if first, err := d.IndexErr(0); err == nil && !strings.HasPrefix(first.Key(), "$") {
				s.add(el.Key()) // a nested projection of the field
			}
		}
	}
}

// readForFind tells a collection scan what a find reads of large
// documents: its filter's paths to match; to return, the projection's (with
// the filter's and sort's, which positional projections and the sort
// use), or, without a projection but with a sort, only what the sort reads,
// the documents being read whole again in sorted order (sortScan).
func (p *Plan) readForFind(filter, sort, projection bsoncore.Document) {
	p.setScanReads(filter, func(out *pathSet) {
		n := len(out.paths)
		out.addSort(value.OrEmpty(sort))
		sorts := len(out.paths) > n // a sort with keys, not {$natural}
		switch {
		case nonEmpty(projection):
			out.addProjection(projection)
			p.fetchOut = true
		case !sorts:
			out.whole = true
		}
	})
}

// readForCount tells a collection scan that counting reads of large
// documents only what the filter matches on.
func (p *Plan) readForCount(filter bsoncore.Document) {
	p.setScanReads(filter, func(*pathSet) { p.fetchOut = true }) // counting needs no more
}

// readForPipeline tells a collection scan that feeds a pipeline to read
// only reads of large documents (PipelineReads; nil: whole documents).
func (p *Plan) readForPipeline(reads []string) {
	if reads != nil && p.ix == nil && !p.idHack && p.text == nil {
		p.readMatch, p.readOut = reads, reads
	}
}

// setScanReads sets, for a collection scan, the paths read of large
// documents: the filter's to match them, and those plus what addOut adds
// to return them.
func (p *Plan) setScanReads(filter bsoncore.Document, addOut func(*pathSet)) {
	if p.text != nil {
		return
	}
	var match pathSet
	match.addFilter(value.OrEmpty(filter))
	if p.readMatch = match.list(); p.readMatch == nil {
		return
	}
	out := pathSet{paths: append([]string(nil), match.paths...)}
	addOut(&out)
	p.readOut = out.list()
}

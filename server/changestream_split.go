package server

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $changeStreamSplitLargeEvent, as mongod 8 runs it: an event bigger than
// maxChangeEventBytes is returned as fragments, each with its own resume
// token as _id, splitEvent {fragment, of}, and as many of the event's
// top-level fields as fit, smallest first. A stream resumed from a
// fragment's token returns the fragments after it. Without the stage such
// an event fails the stream with BSONObjectTooLarge, as on mongod.

// splitStage is the stage's name; it must end a $changeStream pipeline.
const splitStage = "$changeStreamSplitLargeEvent"

// maxChangeEventBytes is mongod's limit on an event with its token counted
// twice (the batch's postBatchResumeToken may repeat it): 16 MiB plus the
// 16 KiB of internal headroom, less 8 KiB.
const maxChangeEventBytes = maxBsonObjectSize + 16*1024 - 8*1024

// splitStageOf removes $changeStreamSplitLargeEvent from the stages after
// $changeStream, checking it as mongod does: an empty spec, last, once.
func splitStageOf(stages []bsoncore.Document) ([]bsoncore.Document, bool, error) {
	for i, st := range stages {
		if value.FirstKey(st) != splitStage {
			continue
		}
		if spec, ok := st.Index(0).Value().DocumentOK(); !ok || len(spec) != 5 {
			return nil, false, mongoerr.New(mongoerr.Location7182800, "$changeStreamSplitLargeEvent spec should be an empty object")
		}
		if i != len(stages)-1 {
			return nil, false, mongoerr.New(mongoerr.Location7182802, "$changeStreamSplitLargeEvent must be the last stage in the pipeline")
		}
		return stages[:i], true, nil
	}
	return stages, false, nil
}

// checkSplitResume refuses to resume from a fragment's token without the
// stage, which alone can reproduce the fragments.
func (a changeStreamArgs) checkSplitResume(split bool) error {
	for _, t := range []*resumeToken{a.resumeAfter, a.startAfter} {
		if t != nil && t.split && !split {
			return mongoerr.New(mongoerr.ChangeStreamFatalError, "To resume from a split event, the $changeStream pipeline must include a $changeStreamSplitLargeEvent stage")
		}
	}
	return nil
}

// deliver queues one event the stream's stages produced, split into
// fragments when it is too big and the stream asked for that.
func (cs *changeStream) deliver(doc bsoncore.Document, token resumeToken, seq uint64) error {
	tokenDoc := token.doc()
	size := len(doc) + len(tokenDoc) + len("_id") + 2
	resumed := cs.skipFragments > 0 && seq == cs.skipSeq && int64(token.idx) == cs.skipIdx+1
	if size <= maxChangeEventBytes {
		if resumed {
			return errDifferentSplit()
		}
		cs.ready = append(cs.ready, streamEvent{doc: doc, token: tokenDoc, seq: seq})
		return nil
	}
	if !cs.split {
		return mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: _id: %s",
			len(doc), len(doc), maxBsonObjectSize+16*1024, value.Format(value.DocValue(tokenDoc)))
	}
	frags, err := splitEvent(doc, token, maxChangeEventBytes-len(tokenDoc))
	if err != nil {
		return err
	}
	if resumed {
		if int(cs.skipFragments) >= len(frags) {
			return errDifferentSplit()
		}
		frags, cs.skipFragments = frags[cs.skipFragments:], 0
	}
	for _, f := range frags {
		cs.ready = append(cs.ready, streamEvent{doc: f.doc, token: f.token, seq: seq})
	}
	return nil
}

func errDifferentSplit() error {
	return mongoerr.New(mongoerr.ChangeStreamFatalError, "Attempted to resume from a split event, but the resumed stream produced a different split. Ensure that the pipeline used to resume is the same as the original")
}

type fragment struct{ doc, token bsoncore.Document }

// splitEvent cuts an event into fragments of at most max bytes, filling
// each with the smallest fields left (by size, then name), so the first
// fragments hold as many fields as they can.
func splitEvent(doc bsoncore.Document, token resumeToken, max int) ([]fragment, error) {
	els, _ := doc.Elements()
	fields := make([]bsoncore.Element, 0, len(els))
	for _, el := range els {
		if el.Key() != "_id" {
			fields = append(fields, el)
		}
	}
	sort.SliceStable(fields, func(i, j int) bool {
		if len(fields[i]) != len(fields[j]) {
			return len(fields[i]) < len(fields[j])
		}
		return fields[i].Key() < fields[j].Key()
	})
	var groups [][]bsoncore.Element
	for len(fields) > 0 {
		head := fragmentDoc(token, len(groups), 0, nil)
		n, size := 1, len(head)+len(fields[0])
		for n < len(fields) && size+len(fields[n]) <= max {
			size += len(fields[n])
			n++
		}
		if size > max {
			return nil, mongoerr.New(mongoerr.Location7182500, "Splitting change event failed: fragment size %d is greater than maximum allowed fragment size %d", size, max)
		}
		groups, fields = append(groups, fields[:n]), fields[n:]
	}
	out := make([]fragment, len(groups))
	for i, g := range groups {
		t := token
		t.split, t.fragment = true, uint32(i)
		out[i] = fragment{doc: fragmentDoc(token, i, len(groups), g), token: t.doc()}
	}
	return out, nil
}

// fragmentDoc is fragment i of n: its token, splitEvent and fields.
func fragmentDoc(token resumeToken, i, n int, fields []bsoncore.Element) bsoncore.Document {
	token.split, token.fragment = true, uint32(i)
	b := bsoncore.NewDocumentBuilder().AppendDocument("_id", token.doc()).
		AppendDocument("splitEvent", bsoncore.NewDocumentBuilder().AppendInt32("fragment", int32(i+1)).AppendInt32("of", int32(n)).Build())
	for _, f := range fields {
		b.AppendValue(f.Key(), f.Value())
	}
	return b.Build()
}

package timeseries

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// unpackSpec is what unpacking needs of a bucket collection's fields.
type unpackSpec struct {
	timeField, metaField string // metaField "": none
}

// Unpack is a bucket's measurements: measurement i has every data field
// with an "i" entry, the time field first, then the meta field, then the
// others in the bucket's order, as $_internalUnpackBucket reads them. A
// document that is not a bucket unpacks to nothing.
func Unpack(b bsoncore.Document, timeField, metaField string) []bsoncore.Document {
	u := unpackSpec{timeField: timeField, metaField: metaField}
	data, ok := b.Lookup("data").DocumentOK()
	if !ok {
		return nil
	}
	times, ok := data.Lookup(u.timeField).DocumentOK()
	if !ok {
		return nil
	}
	cols := u.columns(data)
	meta, hasMeta := bsoncore.Value{}, false
	if u.metaField != "" {
		if m, err := b.LookupErr("meta"); err == nil {
			meta, hasMeta = m, true
		}
	}
	keys, _ := times.Elements()
	out := make([]bsoncore.Document, 0, len(keys))
	for _, k := range keys {
		d := bsoncore.NewDocumentBuilder().AppendValue(u.timeField, k.Value())
		if hasMeta {
			d.AppendValue(u.metaField, meta)
		}
		for i := range cols {
			if v, ok := cols[i].at(k.Key()); ok {
				d.AppendValue(cols[i].name, v)
			}
		}
		out = append(out, d.Build())
	}
	return out
}

// column is one data field's entries, read in measurement order: the
// entries are numbered in increasing order, so each measurement's is the
// next one or absent, and a bucket unpacks in one pass over each column.
type column struct {
	name    string
	entries []bsoncore.Element
	next    int
}

// columns are data's fields but the time field.
func (u unpackSpec) columns(data bsoncore.Document) []column {
	els, _ := data.Elements()
	cols := make([]column, 0, len(els))
	for _, el := range els {
		if el.Key() == u.timeField {
			continue
		}
		d, ok := el.Value().DocumentOK()
		if !ok {
			continue
		}
		entries, _ := d.Elements()
		cols = append(cols, column{name: el.Key(), entries: entries})
	}
	return cols
}

// at is the column's entry for key, if it has one.
func (c *column) at(key string) (bsoncore.Value, bool) {
	if c.next < len(c.entries) && c.entries[c.next].Key() == key {
		c.next++
		return c.entries[c.next-1].Value(), true
	}
	return bsoncore.Value{}, false
}

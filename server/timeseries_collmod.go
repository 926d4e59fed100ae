package server

import (
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// collMod of a time-series collection: expireAfterSeconds (a number or
// "off") and timeseries's granularity or bucketing seconds, which may only
// grow, with mongod's checks (isTimeseriesGranularityValidAndUnchanged).
// Growing keeps the stored buckets valid: each still spans less than the
// new bucketMaxSpanSeconds.

// tsCollMod is what a collMod changes of a time-series collection.
type tsCollMod struct {
	expire         bsoncore.Value // Type 0: unchanged
	granularity    string
	span, rounding int64
	timeseries     bool // timeseries was given
}

// expireHandler and timeseriesHandler read collMod's arguments.
func (m *tsCollMod) expireHandler() fieldHandler {
	return func(v bsoncore.Value) error {
		if s, ok := v.StringValueOK(); ok && s == "off" {
			m.expire = v
			return nil
		}
		n, ok := value.AsInt64(v)
		if !ok || n < 0 {
			return mongoerr.New(mongoerr.InvalidOptions, "Invalid value for 'expireAfterSeconds': %s", value.Format(v))
		}
		m.expire = value.Int64(n)
		return nil
	}
}

func (m *tsCollMod) timeseriesHandler() fieldHandler {
	return func(v bsoncore.Value) error {
		d, ok := v.DocumentOK()
		if !ok {
			return typeMismatch("collMod", "timeseries", v, "object")
		}
		m.timeseries = true
		return value.EachField(d, func(k string, fv bsoncore.Value) error {
			var err error
			switch k {
			case "granularity":
				m.granularity, err = parseGranularity("collMod", fv)
			case "bucketMaxSpanSeconds":
				m.span, err = bucketSecondsArg("collMod", k, fv)
			case "bucketRoundingSeconds":
				m.rounding, err = bucketSecondsArg("collMod", k, fv)
			default:
				err = unknownField("collMod.timeseries", k)
			}
			return err
		})
	}
}

// given reports whether the collMod changes a time-series option.
func (m *tsCollMod) given() bool { return m.expire.Type != 0 || m.timeseries }

// apply checks the change of the bucketing against o and makes it.
func (m *tsCollMod) apply(o tsOptions) (tsOptions, error) {
	if !m.timeseries || m.granularity == "" && m.span == 0 && m.rounding == 0 {
		return o, nil
	}
	next := o
	if m.granularity != "" {
		secs := granularitySeconds[m.granularity]
		if m.span != 0 && m.span != secs[0] {
			return o, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default for the provided granularity")
		}
		if m.rounding != 0 {
			return o, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity parameter")
		}
		if err := granularityTransition(o.granularity, m.granularity); err != nil {
			return o, err
		}
		next.granularity, next.maxSpan, next.rounding = m.granularity, secs[0], secs[1]
	} else {
		if m.span == 0 || m.rounding == 0 {
			return o, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other")
		}
		if m.span != m.rounding {
			return o, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'")
		}
		next.granularity, next.maxSpan, next.rounding = "", m.span, m.rounding
	}
	if o.maxSpan > next.maxSpan {
		return o, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition")
	}
	if o.rounding > next.rounding {
		return o, mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition")
	}
	return next, nil
}

// granularityTransition allows seconds to anything, minutes to hours, and
// no change.
func granularityTransition(from, to string) error {
	if from == "" || from == to || from == "seconds" || from == "minutes" && to == "hours" {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.")
}

// collModTimeseries makes the change on both catalog entries.
func (r *request) collModTimeseries(coll string, m *tsCollMod) error {
	return r.writeExisting(func(tx *storage.Tx) error {
		info, ok := tx.Collection(coll)
		if !ok {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", r.ns(coll))
		}
		o, isTS := timeseriesOf(info)
		if !isTS || strings.HasPrefix(coll, bucketsPrefix) {
			if m.timeseries {
				return mongoerr.New(mongoerr.InvalidOptions, "option only valid on a time-series collection")
			}
			return mongoerr.New(mongoerr.NotImplemented, "collMod option 'expireAfterSeconds' of a collection that is not time-series is not supported by DumboDB yet")
		}
		next, err := m.apply(o)
		if err != nil {
			return err
		}
		own, desc := m.options(info.Options, next)
		if err := tx.SetOptions(coll, own, desc); err != nil {
			return err
		}
		buckets, ok := tx.Collection(bucketsPrefix + coll)
		if !ok {
			return nil
		}
		return tx.SetOptions(buckets.Name, withOption(buckets.Options, "timeseries", next.doc()), desc)
	})
}

// options are the time-series collection's new options and the change's
// description for change streams.
func (m *tsCollMod) options(old bsoncore.Document, next tsOptions) (own, desc bsoncore.Document) {
	b := bsoncore.NewDocumentBuilder().AppendDocument("timeseries", next.doc())
	d := bsoncore.NewDocumentBuilder()
	switch {
	case m.expire.Type == bsoncore.TypeString: // "off"
		d.AppendString("expireAfterSeconds", "off")
	case m.expire.Type != 0:
		b.AppendValue("expireAfterSeconds", m.expire)
		d.AppendValue("expireAfterSeconds", m.expire)
	default:
		if v, err := old.LookupErr("expireAfterSeconds"); err == nil {
			b.AppendValue("expireAfterSeconds", v)
		}
	}
	if m.timeseries {
		d.AppendDocument("timeseries", next.doc())
	}
	return b.Build(), d.Build()
}

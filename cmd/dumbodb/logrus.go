package main

import (
	"io"

	"github.com/rs/zerolog"
	"github.com/sirupsen/logrus"
)

// routeLogrus sends the lines Dolt's storage layer writes through logrus
// (table-file conjoins, ...) to the server's log, in mongod's format under
// the STORAGE component, instead of as logrus's own text lines. Its info
// lines are the store's routine work: they show at verbosity 1.
func routeLogrus(log zerolog.Logger) {
	logrus.SetOutput(io.Discard)
	logrus.SetLevel(logrus.InfoLevel)
	logrus.AddHook(logrusHook{log: log})
}

type logrusHook struct{ log zerolog.Logger }

func (h logrusHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h logrusHook) Fire(e *logrus.Entry) error {
	var ev *zerolog.Event
	switch {
	case e.Level <= logrus.ErrorLevel:
		ev = h.log.Error()
	case e.Level == logrus.WarnLevel:
		ev = h.log.Warn()
	default:
		ev = h.log.Debug()
	}
	ev = ev.Str("c", "STORAGE")
	for k, v := range e.Data {
		ev = ev.Interface(k, v)
	}
	ev.Msg(e.Message)
	return nil
}

package server

import (
	"bytes"
	"sync"
)

// LogRing is an io.Writer that keeps the last lines written to it, so that
// getLog can return recent log lines as mongod does.
type LogRing struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

// NewLogRing keeps up to n lines.
func NewLogRing(n int) *LogRing { return &LogRing{lines: make([]string, n)} }

// Write stores each complete line of p (zerolog writes one event per call).
func (r *LogRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		r.lines[r.next] = string(line)
		r.next = (r.next + 1) % len(r.lines)
		if r.next == 0 {
			r.full = true
		}
	}
	return len(p), nil
}

// Lines returns the kept lines, oldest first.
func (r *LogRing) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	return append(append([]string(nil), r.lines[r.next:]...), r.lines[:r.next]...)
}

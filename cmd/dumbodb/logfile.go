package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// logFile is --logpath: the log written to a file, rotated as mongod
// rotates its own (the logRotate command, SIGUSR1). In "rename" mode a
// rotation renames the file to <path>.<UTC time> and starts a new one;
// in "reopen" mode it opens the path again, for a tool such as logrotate
// that moved the file away.
type logFile struct {
	path, mode string
	mu         sync.Mutex
	f          *os.File
}

// openLogFile opens the log at path. Without appending, a file there
// from an earlier run is first renamed aside, as mongod does.
func openLogFile(path string, appending bool, mode string) (*logFile, error) {
	l := &logFile{path: path, mode: mode}
	if !appending {
		if err := l.renameAside(); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--logpath: %w", err)
	}
	l.f = f
	return l, nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// renameAside renames the file at the path, if any, to <path>.<time>
// (<path>.<time>.<n> when that is taken).
func (l *logFile) renameAside() error {
	if _, err := os.Stat(l.path); err != nil {
		return nil // none there
	}
	aside := l.path + "." + time.Now().UTC().Format("2006-01-02T15-04-05")
	for i := 1; exists(aside); i++ { // rotated twice within a second
		aside = fmt.Sprintf("%s.%s.%d", l.path, time.Now().UTC().Format("2006-01-02T15-04-05"), i)
	}
	if err := os.Rename(l.path, aside); err != nil {
		return fmt.Errorf("--logpath: rotating %s: %w", l.path, err)
	}
	return nil
}

// Rotate rotates the log as its mode says.
func (l *logFile) Rotate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode == "rename" {
		if err := l.renameAside(); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f = f
	return nil
}

// Close closes the file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

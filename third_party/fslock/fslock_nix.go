// Copyright 2016 Canonical Ltd.
// Licensed under the LGPLv3, see LICENCE file for details.
//
// Modified for DumboDB: LockWithTimeout and TryLock never leave the
// descriptor of a failed attempt in the Lock (see README.md).

//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd
// +build darwin dragonfly freebsd linux netbsd openbsd

package fslock

import (
	"syscall"
	"time"
)

// Lock implements cross-process locks using syscalls.
// This implementation is based on flock syscall.
type Lock struct {
	filename string
	fd       int
}

// New returns a new lock around the given file.
func New(filename string) *Lock {
	return &Lock{filename: filename}
}

// Lock locks the lock.  This call will block until the lock is available.
func (l *Lock) Lock() error {
	if err := l.open(); err != nil {
		return err
	}
	return syscall.Flock(l.fd, syscall.LOCK_EX)
}

// TryLock attempts to lock the lock.  This method will return ErrLocked
// immediately if the lock cannot be acquired.
func (l *Lock) TryLock() error {
	fd, err := openLockFile(l.filename)
	if err != nil {
		return err
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// The descriptor is closed here, so it must not stay in l for a
		// later Unlock to close again: by then its number may be another
		// file's.
		syscall.Close(fd)
		if err == syscall.EWOULDBLOCK {
			return ErrLocked
		}
		return err
	}
	l.fd = fd
	return nil
}

func (l *Lock) open() error {
	fd, err := openLockFile(l.filename)
	if err != nil {
		return err
	}
	l.fd = fd
	return nil
}

func openLockFile(filename string) (int, error) {
	return syscall.Open(filename, syscall.O_CREAT|syscall.O_RDWR|syscall.O_CLOEXEC, 0600)
}

// Unlock unlocks the lock.
func (l *Lock) Unlock() error {
	if l.fd < 0 {
		return nil
	}
	_ = syscall.Flock(l.fd, syscall.LOCK_UN)
	err := syscall.Close(l.fd)
	l.fd = -1
	return err
}

// LockWithTimeout tries to lock the lock until the timeout expires.  If the
// timeout expires, this method will return ErrTimeout.
//
// Each call locks a descriptor of its own, which goes into l only once
// locked. On a timeout the goroutine still waiting in flock keeps that
// descriptor to itself: once it gets the lock it releases it and closes
// its own descriptor. (It read l.fd instead, so a timed-out attempt
// unlocked and closed the descriptor of the attempt after it, or of
// whatever file had taken its number, and kept the lock forever on its
// own.)
func (l *Lock) LockWithTimeout(timeout time.Duration) error {
	fd, err := openLockFile(l.filename)
	if err != nil {
		return err
	}
	result := make(chan error, 1)
	go func() { result <- syscall.Flock(fd, syscall.LOCK_EX) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-result:
		if err != nil {
			syscall.Close(fd)
			return err
		}
		l.fd = fd
		return nil
	case <-timer.C:
		go func() {
			if <-result == nil {
				syscall.Flock(fd, syscall.LOCK_UN)
			}
			syscall.Close(fd)
		}()
		return ErrTimeout
	}
}

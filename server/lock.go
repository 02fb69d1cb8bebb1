package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LockFile is the file in the data directory that a running server holds
// locked (flock, exclusive) for its whole life, with its pid inside. A
// second server on the same directory fails with ErrDataDirInUse. Only
// servers take it: `batchd user add` and `batchd bill` open the database
// beside a running server, as SQLite allows.
const LockFile = "batchd.lock"

// ErrDataDirInUse is returned by New when another server holds the data
// directory (see DataDirInUseError for the holder's pid).
var ErrDataDirInUse = errors.New("data directory in use by another batchd server")

// DataDirInUseError says which process holds the data directory.
type DataDirInUseError struct {
	Dir string
	// PID is the holder's process id (0 when it has not written it yet).
	PID int
}

func (e *DataDirInUseError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("data directory %s is in use by another batchd server (pid %d); stop it or pick another --data", e.Dir, e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by another batchd server; stop it or pick another --data", e.Dir)
}

// Is makes errors.Is(err, ErrDataDirInUse) true.
func (e *DataDirInUseError) Is(target error) bool { return target == ErrDataDirInUse }

// lockDataDir creates dir (0700) when it is missing, then takes the lock
// file's exclusive lock without waiting and writes this process's pid into
// it. When the lock is held elsewhere it returns a *DataDirInUseError and
// leaves behind nothing it created. cleanup undoes the creation of dir; call
// it when a later step of the start fails.
func lockDataDir(dir string) (lock *os.File, cleanup func(), err error) {
	created := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create data directory: %w", err)
		}
		created = true
	}
	cleanup = func() {
		if created {
			_ = os.RemoveAll(dir)
		}
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("open lock file: %w", err)
	}
	held, err := tryLock(f)
	// A server of this same process that has just closed may still look
	// like the holder: a child forked meanwhile (a copy, os/exec) shares
	// the lock's open file description from its fork until its exec
	// closes it. Wait that out, briefly; any other holder is refused at once.
	for tries := 0; err == nil && held && tries < 300 && lockPID(path) == os.Getpid(); tries++ {
		time.Sleep(10 * time.Millisecond)
		held, err = tryLock(f)
	}
	if err != nil {
		f.Close()
		cleanup()
		return nil, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if held {
		pid := lockPID(path)
		f.Close()
		cleanup()
		return nil, nil, &DataDirInUseError{Dir: dir, PID: pid}
	}
	// The pid is for the message only: the lock itself is what counts.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, cleanup, nil
}

// lockPID is the pid written in the lock file at path (0 when unreadable).
func lockPID(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

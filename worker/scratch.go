package worker

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// scratchDirs hands out the copies' scratch directories (working
// directory and progress file) under StateDir/copies. A directory a copy
// left empty, as most do, is handed to a later copy instead of being
// removed and made again: checking that it is empty reads it (open,
// getdents, close), which costs a fifth of an mkdir and an rmdir, both of
// which write the file system's journal. A directory a copy left anything
// in is removed with its contents, so no copy ever sees another's files.
type scratchDirs struct {
	root string
	max  int // empty directories kept for reuse

	mu   sync.Mutex
	free []string
	next int64
}

// take returns an empty directory.
func (p *scratchDirs) take() (string, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		dir := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return dir, nil
	}
	p.next++
	dir := filepath.Join(p.root, strconv.FormatInt(p.next, 10))
	p.mu.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// give takes back a directory once its copy has ended: kept for reuse if
// the copy left it empty, else removed.
func (p *scratchDirs) give(dir string) error {
	empty, err := emptyDir(dir)
	if err == nil && empty {
		p.mu.Lock()
		if len(p.free) < p.max {
			p.free = append(p.free, dir)
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
	if err := syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return os.RemoveAll(dir)
}

// emptyDir says whether dir holds nothing but "." and "..".
func emptyDir(dir string) (bool, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer syscall.Close(fd)
	var buf [512]byte
	for {
		n, err := syscall.Getdents(fd, buf[:])
		if err != nil {
			return false, err
		}
		if n <= 0 {
			return true, nil
		}
		_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
		if len(names) > 0 { // ParseDirent skips "." and ".."
			return false, nil
		}
	}
}

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
	free []freeScratch
	next int64
}

// freeScratch is an empty directory kept for reuse, and the sandbox
// index (its slot uid owns the directory) it was last used at, -1 none.
type freeScratch struct {
	dir   string
	index int
}

// take returns an empty directory, and the sandbox index it was last used
// at (-1 for none): a copy that runs at that index again finds it owned
// by its slot uid already.
func (p *scratchDirs) take() (string, int, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		f := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return f.dir, f.index, nil
	}
	p.next++
	dir := filepath.Join(p.root, strconv.FormatInt(p.next, 10))
	p.mu.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", -1, err
	}
	return dir, -1, nil
}

// give takes back a directory once its copy, which ran at sandbox index
// index (-1 none), has ended: kept for reuse if the copy left it empty,
// else removed.
func (p *scratchDirs) give(dir string, index int) error {
	empty, err := emptyDir(dir)
	if err == nil && empty {
		p.mu.Lock()
		if len(p.free) < p.max {
			p.free = append(p.free, freeScratch{dir: dir, index: index})
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

//go:build linux

package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// A scratch directory goes back to a copy at the index it was last used
// at when that index is free, and then needs no chown or chmod (its
// inode's change time stays); one its copy opened up is closed again, and
// one taken at another index belongs to that index's uid.
func TestScratchReusedAtItsIndex(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("slot uids need root")
	}
	s := &sandbox{mech: IsolationUID, root: true, uids: UIDRange{First: 63100, Count: 4}, ids: &indexPool{}}
	p := &scratchDirs{root: t.TempDir(), max: 4}
	stat := func(dir string) syscall.Stat_t {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Lstat(dir, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	prepare := func() (*prepared, string) {
		t.Helper()
		dir, near, err := p.take()
		if err != nil {
			t.Fatal(err)
		}
		box, err := s.prepareNear(exec.Command("true"), "", dir, near)
		if err != nil {
			t.Fatal(err)
		}
		return box, dir
	}
	other, _ := prepare() // holds index 0
	box, dir := prepare()
	if box.index != 1 || stat(dir).Uid != 63101 || stat(dir).Mode&0o7777 != 0o700 {
		t.Fatalf("index %d, dir uid %d mode %o", box.index, stat(dir).Uid, stat(dir).Mode&0o7777)
	}
	box.release()
	if err := p.give(dir, box.index); err != nil {
		t.Fatal(err)
	}
	before := stat(dir)

	box, again := prepare()
	if again != dir || box.index != 1 {
		t.Fatalf("took %s at index %d, want %s at 1", again, box.index, dir)
	}
	if after := stat(dir); after.Ctim != before.Ctim {
		t.Errorf("the directory was changed (ctime %v, then %v): owned by the index's uid already", before.Ctim, after.Ctim)
	}

	// Its copy opened it up: the next copy there gets it 0700 again.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	box.release()
	if err := p.give(dir, box.index); err != nil {
		t.Fatal(err)
	}
	box, _ = prepare()
	if st := stat(dir); box.index != 1 || st.Mode&0o7777 != 0o700 || st.Uid != 63101 {
		t.Errorf("index %d, dir uid %d mode %o; want index 1, uid 63101, 0700", box.index, st.Uid, st.Mode&0o7777)
	}

	// Its index is busy: another index's uid takes it over.
	if err := p.give(dir, box.index); err != nil {
		t.Fatal(err)
	}
	third, again := prepare()
	if again != dir || third.index != 2 || stat(dir).Uid != 63102 || stat(dir).Gid != 63102 {
		t.Errorf("took %s at index %d, uid %d; want %s at 2, uid 63102", again, third.index, stat(dir).Uid, dir)
	}
	third.release()
	box.release()
	other.release()
}

// A directory kept for reuse waits owned by its last copy's slot uid, so
// a later copy running as that uid can put files in it after it was
// checked empty. The copy that takes it next, at that index or another,
// finds it empty all the same.
func TestScratchPlantedWhileFree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("slot uids need root")
	}
	for _, sameIndex := range []bool{true, false} {
		s := &sandbox{mech: IsolationUID, root: true, uids: UIDRange{First: 63200, Count: 4}, ids: &indexPool{}}
		p := &scratchDirs{root: t.TempDir(), max: 4}
		dir, near, err := p.take()
		if err != nil {
			t.Fatal(err)
		}
		box, err := s.prepareNear(exec.Command("true"), "", dir, near)
		if err != nil {
			t.Fatal(err)
		}
		box.release()
		if err := p.give(dir, box.index); err != nil {
			t.Fatal(err)
		}
		// What a later copy as uid 63200 could do while dir waits.
		planted := filepath.Join(dir, "planted")
		if err := os.WriteFile(planted, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(planted, 63200, 63200); err != nil {
			t.Fatal(err)
		}
		if !sameIndex {
			s.ids.takeNear(0) // index 0 busy: the directory goes to index 1
		}
		got, near, err := p.take()
		if err != nil || got != dir {
			t.Fatalf("took %s (%v), want %s", got, err, dir)
		}
		box, err = s.prepareNear(exec.Command("true"), "", got, near)
		if err != nil {
			t.Fatal(err)
		}
		names, err := os.ReadDir(got)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 0 {
			t.Errorf("same index %v: the copy at index %d found %d files in its scratch directory, want none", sameIndex, box.index, len(names))
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(got, &st); err != nil {
			t.Fatal(err)
		}
		if want := uint32(63200 + box.index); st.Uid != want || st.Mode&0o7777 != 0o700 {
			t.Errorf("same index %v: dir uid %d mode %o, want uid %d mode 700", sameIndex, st.Uid, st.Mode&0o7777, want)
		}
		box.release()
	}
}

package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

// viewKept converts a result's kept files for --json.
func viewKept(files []sched.KeptFile) []keptView {
	if len(files) == 0 {
		return nil
	}
	out := make([]keptView, len(files))
	for i, f := range files {
		out[i] = keptView{Path: f.Path, Size: f.Size, Mode: f.Mode, NotKept: f.NotKept}
	}
	return out
}

// listKept prints the kept files of one task's attempt: path, size and,
// for a file that was not kept, why.
func listKept(c *cli.Context, ref sched.TaskRef, out sched.Output) error {
	if asJSON(c) {
		return writeJSON(c.App.Writer, viewKept(out.Files))
	}
	if len(out.Files) == 0 {
		fmt.Fprintf(c.App.ErrWriter, "task %d/%d (attempt %d) kept no files: disclose --keep PATTERN names the files to keep\n", ref.Set, ref.Index, out.Attempt)
		return nil
	}
	t := newTable(c, "PATH", "SIZE", "KEPT")
	for _, f := range out.Files {
		kept := "yes"
		if !f.Kept() {
			kept = "no: " + f.NotKept
		}
		size := humanBytes(f.Size)
		if !f.Kept() && f.Size == 0 {
			size = "-"
		}
		if err := t.Append([]string{f.Path, size, kept}); err != nil {
			return err
		}
	}
	return t.Render()
}

// keptName is where a task's kept file goes in --dir and --tar: SET/I/PATH.
func keptName(ref sched.TaskRef, p string) string {
	return path.Join(strconv.FormatInt(int64(ref.Set), 10), strconv.Itoa(int(ref.Index)), p)
}

// keptWriter writes the kept files of a task after its streams, to a
// directory or into the tar stream.
type keptWriter interface {
	// keptFile writes one file, its content from fetch.
	keptFile(name string, f sched.KeptFile, fetch func(io.Writer) error) error
}

// keptFiles writes the files a task kept with w and returns a line per
// file that was not kept (notes) and per file it could not write
// (failed), to print on stderr. An error is returned only when w cannot go
// on (the tar stream broke).
func keptFiles(c *cli.Context, cl *client.Client, w keptWriter, ref sched.TaskRef, files []sched.KeptFile) (notes, failed []string, err error) {
	for _, f := range files {
		if !f.Kept() {
			notes = append(notes, fmt.Sprintf("%d/%d: %s not kept: %s", ref.Set, ref.Index, f.Path, f.NotKept))
			continue
		}
		if !sched.ValidKeptPath(f.Path) {
			// The server refuses such paths; never write one regardless.
			failed = append(failed, fmt.Sprintf("%d/%d: %q not written: not a relative path", ref.Set, ref.Index, f.Path))
			continue
		}
		err := w.keptFile(keptName(ref, f.Path), f, func(dst io.Writer) error {
			_, err := cl.GetKeptFile(c.Context, ref, 0, f.Path, dst)
			return err
		})
		var fileErr *keptFileError
		switch {
		case errors.As(err, &fileErr):
			failed = append(failed, fmt.Sprintf("%d/%d: %s not written: %v", ref.Set, ref.Index, f.Path, errorText(fileErr.err)))
		case err != nil:
			return notes, failed, err
		}
	}
	return notes, failed, nil
}

// keptFileError is a kept file that could not be written; the others go
// on.
type keptFileError struct{ err error }

func (e *keptFileError) Error() string { return e.err.Error() }

// keptDir writes kept files under a directory, never outside it (os.Root
// refuses paths and symlinks that lead out) and over an existing file only
// with force.
type keptDir struct {
	root  *os.Root
	force bool
}

func (d *keptDir) keptFile(name string, f sched.KeptFile, fetch func(io.Writer) error) error {
	if err := d.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return &keptFileError{err}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if d.force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	out, err := d.root.OpenFile(name, flags, fs.FileMode(f.Mode&0o777|0o600))
	if errors.Is(err, fs.ErrExist) {
		return &keptFileError{fmt.Errorf("%s exists: give --force to write over it", name)}
	} else if err != nil {
		return &keptFileError{err}
	}
	err = fetch(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &keptFileError{err}
	}
	return nil
}

// keptFile adds a kept file to the tar stream. It is read whole first (the
// server's cap per task bounds it): an entry whose read failed half way
// would break the stream.
func (t *tarSink) keptFile(name string, f sched.KeptFile, fetch func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := fetch(&buf); err != nil {
		return &keptFileError{err}
	}
	if err := t.tw.WriteHeader(&tar.Header{Name: name, Size: int64(buf.Len()), Mode: int64(f.Mode&0o777 | 0o600), ModTime: t.mtime,
		Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := t.tw.Write(buf.Bytes())
	return err
}

// keptSummary prints, in status SET/I, the task's keep patterns and, once
// its result is readable, how many files it kept and how many it did not.
func keptSummary(c *cli.Context, cl *client.Client, t sched.Task) {
	if len(t.Spec.Keep) == 0 {
		return
	}
	w := c.App.Writer
	fmt.Fprintf(w, "keeps: %s\n", strings.Join(t.Spec.Keep, " "))
	if t.State != sched.TaskFinished {
		return
	}
	files, err := cl.KeptFiles(c.Context, sched.TaskRef{Set: t.Set, Index: t.Index}, 0)
	if err != nil {
		return // the output's own rules: status says the state already
	}
	kept, size := 0, int64(0)
	for _, f := range files {
		if f.Kept() {
			kept++
			size += f.Size
		}
	}
	line := fmt.Sprintf("kept files: %d (%s)", kept, humanBytes(size))
	if n := len(files) - kept; n > 0 {
		line += fmt.Sprintf(", %d not kept", n)
	}
	fmt.Fprintf(w, "%s: batchctl output --files %d/%d lists them\n", line, t.Set, t.Index)
}

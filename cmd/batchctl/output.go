package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/sched"
)

// bulkOutput writes the outputs of the selected tasks (the whole set when
// none are named) as DIR/SET-I.out and DIR/SET-I.err with --dir, or as
// the same files in a tar stream with --tar, reading many tasks a call.
// Tasks with no readable output are named on stderr and make the command
// fail (exit 3) once the others are written.
func bulkOutput(c *cli.Context, sel taskSel) error {
	dir, asTar := c.String("dir"), c.Bool("tar")
	if dir != "" && asTar {
		return usageErr("give --dir or --tar, not both")
	}
	if c.Bool("files") {
		return usageErr("--files lists one task's kept files; --dir and --tar write them with the outputs")
	}
	if c.Bool("stderr") || asJSON(c) {
		return usageErr("--stderr and --json read one task; --dir and --tar write both streams of many")
	}
	pageBytes, err := parseBytes("page-bytes", c.String("page-bytes"))
	if err != nil {
		return err
	}
	var (
		w  sink
		kw keptWriter
	)
	switch {
	case dir != "":
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return usageErr("--dir: %v", err)
		}
		w = &dirSink{dir: dir}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return usageErr("--dir: %v", err)
		}
		defer root.Close()
		kw = &keptDir{root: root, force: c.Bool("force")}
	default:
		out := c.App.Writer
		if f := c.String("output"); f != "" && f != "-" {
			file, err := os.Create(f)
			if err != nil {
				return usageErr("--output: %v", err)
			}
			defer file.Close()
			out = file
		} else if isTerminal(out) {
			return usageErr("--tar writes a tar stream: redirect stdout (batchctl output --tar %d > out.tar) or give --output FILE", sel.Set)
		}
		tw := &tarSink{tw: tar.NewWriter(out), mtime: time.Now()}
		defer tw.tw.Close()
		w, kw = tw, tw
	}
	cl := newClient(c)
	if len(sel.Indexes) > 0 {
		// Indexes past the set's end are unknown tasks (exit 2), as request
		// and cancel say for the same range, not tasks with nothing to write.
		page, err := cl.GetTaskSet(c.Context, client.GetTaskSetInput{Set: sel.Set, PageSize: 1})
		if err != nil {
			return err
		}
		if top := slices.Max(sel.Indexes); int64(top) >= page.Set.Counts.Total {
			return sched.Errorf(sched.ENOTFOUND, "task %d not found: set %d has tasks 0 to %d", top, sel.Set, page.Set.Counts.Total-1)
		}
	}
	total := len(sel.Indexes)
	prog := newCountProgress(c.App.ErrWriter, !c.Bool("quiet"), total)
	var (
		done, bytes          int64
		missing              []string
		keptNotes, keptFails []string
		pending              []sched.KeptFile // the kept files of the task being written
	)
	err = cl.GetOutputs(c.Context, client.GetOutputsInput{Set: sel.Set, Indexes: sel.Indexes, PageBytes: pageBytes}, func(p client.OutputPiece) error {
		if p.Unreadable != "" {
			missing = append(missing, fmt.Sprintf("%d/%d (%s)", sel.Set, p.Index, p.Unreadable))
			done++
			prog.update(done, bytes)
			return nil
		}
		base := fmt.Sprintf("%d-%d", sel.Set, p.Index)
		if p.StdoutOffset == 0 && p.StderrOffset == 0 {
			pending = p.Output.Files // listed in a task's first piece
		}
		if err := w.write(base, p); err != nil {
			return err
		}
		if p.Last() && len(pending) > 0 {
			notes, failed, err := keptFiles(c, cl, kw, sched.TaskRef{Set: sel.Set, Index: p.Index}, pending)
			keptNotes, keptFails, pending = append(keptNotes, notes...), append(keptFails, failed...), nil
			if err != nil {
				return err
			}
		}
		bytes += int64(len(p.Output.Stdout) + len(p.Output.Stderr))
		if p.Last() {
			done++
		}
		prog.update(done, bytes)
		return nil
	})
	prog.stop(done, bytes)
	if err != nil {
		return err
	}
	if t, ok := w.(*tarSink); ok {
		if err := t.tw.Close(); err != nil {
			return err
		}
	}
	for _, n := range keptNotes {
		fmt.Fprintf(c.App.ErrWriter, "batchctl: %s\n", n)
	}
	for _, n := range keptFails {
		fmt.Fprintf(c.App.ErrWriter, "batchctl: %s\n", n)
	}
	if len(keptFails) > 0 && len(missing) == 0 {
		return sched.Errorf(sched.EFAILEDPRECONDITION, "%d kept files could not be written (listed above); the rest were", len(keptFails))
	}
	if len(missing) > 0 {
		for _, m := range missing {
			fmt.Fprintf(c.App.ErrWriter, "batchctl: no output for task %s\n", m)
		}
		return sched.Errorf(sched.EFAILEDPRECONDITION, "%d of %d tasks had no output to read (listed above); the other %d were written",
			len(missing), done, done-int64(len(missing)))
	}
	return nil
}

// sink is where bulkOutput writes the pieces, in order.
type sink interface {
	write(base string, p client.OutputPiece) error
}

// dirSink writes DIR/BASE.out and DIR/BASE.err.
type dirSink struct{ dir string }

func (d *dirSink) write(base string, p client.OutputPiece) error {
	for _, s := range []struct {
		ext  string
		off  int64
		data []byte
	}{{".out", p.StdoutOffset, p.Output.Stdout}, {".err", p.StderrOffset, p.Output.Stderr}} {
		if s.off > 0 && len(s.data) == 0 {
			continue // the stream was finished in an earlier piece
		}
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if s.off > 0 {
			flags = os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(filepath.Join(d.dir, base+s.ext), flags, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(s.data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tarSink writes BASE.out and BASE.err as tar entries. The server sends a
// task's stdout whole before any of its stderr, so each entry is written
// in one go, its size known from the first piece.
type tarSink struct {
	tw    *tar.Writer
	mtime time.Time
	// errOpen: the current task's .err header is written.
	errOpen bool
}

func (t *tarSink) header(name string, size int64) error {
	return t.tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o644, ModTime: t.mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX})
}

func (t *tarSink) write(base string, p client.OutputPiece) error {
	if p.StdoutOffset == 0 && p.StderrOffset == 0 {
		// A task's first piece (a later one starts past 0 in a stream).
		t.errOpen = false
		if err := t.header(base+".out", p.Output.StdoutSize); err != nil {
			return err
		}
	}
	if _, err := t.tw.Write(p.Output.Stdout); err != nil {
		return err
	}
	if p.StdoutOffset+int64(len(p.Output.Stdout)) < p.Output.StdoutSize {
		return nil // stdout goes on in the next piece
	}
	if !t.errOpen {
		t.errOpen = true
		if err := t.header(base+".err", p.Output.StderrSize); err != nil {
			return err
		}
	}
	_, err := t.tw.Write(p.Output.Stderr)
	return err
}

// countProgress prints "N/TOTAL tasks, BYTES" on stderr at most every
// second while many tasks are written, and a summary at the end.
type countProgress struct {
	w     io.Writer
	on    bool
	total int
	last  time.Time
	term  bool
}

func newCountProgress(w io.Writer, on bool, total int) *countProgress {
	return &countProgress{w: w, on: on, total: total, last: time.Now(), term: isTerminal(w)}
}

func (p *countProgress) line(done, bytes int64) string {
	of := ""
	if p.total > 0 {
		of = fmt.Sprintf("/%d", p.total)
	}
	return fmt.Sprintf("output: %d%s tasks, %s", done, of, humanBytes(bytes))
}

func (p *countProgress) update(done, bytes int64) {
	if !p.on || time.Since(p.last) < time.Second {
		return
	}
	p.last = time.Now()
	if p.term {
		fmt.Fprintf(p.w, "\r\033[K%s", p.line(done, bytes))
	} else {
		fmt.Fprintln(p.w, p.line(done, bytes))
	}
}

func (p *countProgress) stop(done, bytes int64) {
	if !p.on {
		return
	}
	if p.term {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, p.line(done, bytes)+" written")
}

// humanBytes formats n as B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// parseBytes reads a size such as 4M, 512K or 1000 (bytes); "" is 0.
func parseBytes(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	switch u := strings.ToUpper(s[len(s)-1:]); u {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	}
	num := s
	if mult > 1 {
		num = s[:len(s)-1]
	}
	var n int64
	if _, err := fmt.Sscan(num, &n); err != nil || n <= 0 || fmt.Sprint(n) != num {
		return 0, usageErr("--%s %q: want a size such as 4M, 512K or a number of bytes", flag, s)
	}
	return n * mult, nil
}

// outputsOf reads the outputs of tasks (any sets) with GetOutputs, a call
// per set and page, for request --with-output. Tasks with no readable
// output have none in the map.
func outputsOf(c *cli.Context, cl *client.Client, tasks []sched.Task) (map[sched.TaskRef]*sched.Output, error) {
	bySet := map[sched.SetID][]int32{}
	var order []sched.SetID
	for _, t := range tasks {
		if _, ok := bySet[t.Set]; !ok {
			order = append(order, t.Set)
		}
		bySet[t.Set] = append(bySet[t.Set], t.Index)
	}
	out := map[sched.TaskRef]*sched.Output{}
	for _, set := range order {
		// Consecutive indexes (a whole set) go as a range (client.GetOutputs).
		err := cl.GetOutputs(c.Context, client.GetOutputsInput{Set: set, Indexes: bySet[set]}, func(p client.OutputPiece) error {
			if p.Unreadable != "" {
				return nil
			}
			ref := sched.TaskRef{Set: set, Index: p.Index}
			o := out[ref]
			if o == nil {
				cp := p.Output
				cp.Stdout = append([]byte(nil), p.Output.Stdout...)
				cp.Stderr = append([]byte(nil), p.Output.Stderr...)
				out[ref] = &cp
				return nil
			}
			o.Stdout = append(o.Stdout, p.Output.Stdout...)
			o.Stderr = append(o.Stderr, p.Output.Stderr...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

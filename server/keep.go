// Kept files: what a worker reports of the files a copy left (checked
// here against the cap per task, whatever the worker says), and
// GetKeptFile.

package server

import (
	"context"
	"errors"
	"fmt"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// Defaults of Config.KeepMaxTask and Config.KeepMaxUser.
const (
	DefaultKeepMaxTask = 16 << 20
	DefaultKeepMaxUser = 1 << 30
)

// keptListBytes bounds what the list of a report's kept files (paths and
// reasons, without contents) may add to it, with room for protobuf's and
// JSON's framing.
const keptListBytes = 2 * sched.MaxKeptListBytes

// maxNotKeptBytes bounds the reason a worker gives for a file it did not
// keep.
const maxNotKeptBytes = 1024

// keptFromReport takes the kept files of a worker's report: entries with a
// path a client must not write are dropped (and logged: a sound worker
// never sends one), and files past KeepMaxTask bytes, counted in order,
// are listed as not kept.
func (s *Server) keptFromReport(req *batchv1.ReportFinishedRequest) []store.KeptContent {
	if len(req.Kept) == 0 {
		return nil
	}
	room := s.cfg.KeepMaxTask
	out := make([]store.KeptContent, 0, len(req.Kept))
	for i, k := range req.Kept {
		if i >= sched.MaxKeptFiles+sched.MaxKeepPatterns+1 {
			s.log.Warn("worker reported more kept files than it may; the rest are dropped", "worker", req.WorkerId, "copy", req.CopyId, "files", len(req.Kept))
			break
		}
		f := k.GetFile()
		if !sched.ValidKeptPath(f.GetPath()) {
			s.log.Warn("worker reported a kept file with a path no client may write; dropped", "worker", req.WorkerId, "copy", req.CopyId, "path", fmt.Sprintf("%.100q", f.GetPath()))
			continue
		}
		kf := sched.KeptFile{Path: f.GetPath(), Size: max(f.GetSize(), 0), Mode: f.GetMode() & 0o7777, NotKept: f.GetNotKept()}
		content := k.GetContent()
		if len(kf.NotKept) > maxNotKeptBytes {
			kf.NotKept = kf.NotKept[:maxNotKeptBytes]
		}
		if kf.NotKept != "" {
			content = nil
		} else if n := int64(len(content)); n > room {
			kf.NotKept = fmt.Sprintf("%d bytes: over the %s kept per task (batchd serve --keep-max-task), %s of it taken by the files before it",
				n, sizeText(s.cfg.KeepMaxTask), sizeText(s.cfg.KeepMaxTask-room))
			kf.Size, content = n, nil
		} else {
			room -= n
			kf.Size = n
		}
		out = append(out, store.KeptContent{File: kf, Content: content})
	}
	return out
}

// keptToProto converts a result's list of kept files.
func keptToProto(files []sched.KeptFile) []*batchv1.KeptFile {
	if len(files) == 0 {
		return nil
	}
	out := make([]*batchv1.KeptFile, len(files))
	for i, f := range files {
		out[i] = &batchv1.KeptFile{Path: f.Path, Size: f.Size, Mode: f.Mode, NotKept: f.NotKept}
	}
	return out
}

// GetKeptFile returns a piece of a file a requested task's attempt kept.
func (h taskSetHandler) GetKeptFile(ctx context.Context, req *batchv1.GetKeptFileRequest) (*batchv1.GetKeptFileResponse, error) {
	s := h.s
	if err := errors.Join(checkSetID("set_id", req.SetId), checkIndex("index", req.Index), checkOutputRange(req.Offset, req.Limit)); err != nil {
		return nil, err
	}
	if !sched.ValidKeptPath(req.Path) {
		return nil, sched.Errorf(sched.EINVALID, "path %.100q: give a kept file's path as listed (batchctl output --files)", req.Path)
	}
	if req.Attempt < 0 {
		return nil, sched.Errorf(sched.EINVALID, "attempt %d: attempts are numbered from 1 (0: the current one)", req.Attempt)
	}
	owner, err := s.ownerFor(ctx, sched.SetID(req.SetId))
	if err != nil {
		return nil, err
	}
	r, err := s.db.GetKeptFile(ctx, owner, sched.TaskRef{Set: sched.SetID(req.SetId), Index: req.Index}, req.Attempt, req.Path, req.Offset, req.Limit)
	if err != nil {
		return nil, err
	}
	return &batchv1.GetKeptFileResponse{File: &batchv1.KeptFile{Path: r.File.Path, Size: r.File.Size, Mode: r.File.Mode},
		Content: r.Content, Attempt: r.Attempt}, nil
}

// sizeText formats n bytes for a person: in B, KiB, MiB or GiB when it is
// a whole number of them.
func sizeText(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}

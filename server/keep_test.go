package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
)

// A set's keep patterns reach the worker with its start; the kept files
// of the winning report come back listed by GetOutput and GetOutputs and
// read by GetKeptFile; the server holds the worker to the cap per task
// and drops entries whose path a client must not write; patterns that
// leave the scratch directory are refused at disclose.
func TestKeptFilesServer(t *testing.T) {
	t.Parallel()
	b := setup(t, options{keepTask: 10})
	for _, bad := range []string{"/etc/passwd", "../x", "", "a/**"} {
		spec := echo(1)
		spec[0].Keep = []string{bad}
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec})
		wantCode(t, err, connect.CodeInvalidArgument)
	}
	w, reg := b.worker(t, "w1", 1)
	if reg.KeepCapBytes != 10 {
		t.Errorf("keep_cap_bytes %d, want 10", reg.KeepCapBytes)
	}
	spec := echo(1)
	spec[0].Keep = []string{"*.txt"}
	set := must[*batchv1.DiscloseResponse](t)(b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: spec, Request: true})).TaskSet
	st := w.start()
	if got := st.GetSpec().GetKeep(); len(got) != 1 || got[0] != "*.txt" {
		t.Fatalf("start carries keep %v", got)
	}
	file := func(path, content, notKept string) *batchv1.KeptFileContent {
		return &batchv1.KeptFileContent{File: &batchv1.KeptFile{Path: path, Size: int64(len(content)), Mode: 0o644, NotKept: notKept}, Content: []byte(content)}
	}
	rep, err := b.workers.ReportFinished(ctx(t), &batchv1.ReportFinishedRequest{WorkerId: "w1", CopyId: st.CopyId, RunSeconds: 1, Kept: []*batchv1.KeptFileContent{
		file("a.txt", "12345", ""), file("b.txt", "123456", ""), file("c.txt", "12345", ""), file("d.txt", "", "a symlink"), file("../evil.txt", "x", ""),
	}})
	if err != nil || rep.Outcome != batchv1.ReportOutcome_REPORT_OUTCOME_WON {
		t.Fatalf("report: %v, %v", rep, err)
	}
	out := must[*batchv1.GetOutputResponse](t)(b.tasks.GetOutput(ctx(t), &batchv1.GetOutputRequest{SetId: set.Id}))
	var list []string
	for _, f := range out.Files {
		list = append(list, f.Path+":"+f.NotKept)
	}
	if len(out.Files) != 4 || out.Files[0].NotKept != "" || !strings.Contains(out.Files[1].NotKept, "keep-max-task") || out.Files[2].NotKept != "" || out.Files[3].NotKept != "a symlink" {
		t.Fatalf("files %v; want a and c kept, b over the cap, d a symlink, no ../evil.txt", list)
	}
	page := must[*batchv1.GetOutputsResponse](t)(b.tasks.GetOutputs(ctx(t), &batchv1.GetOutputsRequest{SetId: set.Id}))
	if len(page.Outputs) != 1 || len(page.Outputs[0].Files) != 4 {
		t.Errorf("GetOutputs lists %v", page.Outputs)
	}
	k := must[*batchv1.GetKeptFileResponse](t)(b.tasks.GetKeptFile(ctx(t), &batchv1.GetKeptFileRequest{SetId: set.Id, Path: "c.txt"}))
	if string(k.Content) != "12345" || k.File.Size != 5 || k.Attempt != 1 {
		t.Errorf("GetKeptFile c.txt = %v", k)
	}
	_, err = b.tasks.GetKeptFile(ctx(t), &batchv1.GetKeptFileRequest{SetId: set.Id, Path: "b.txt"})
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = b.tasks.GetKeptFile(ctx(t), &batchv1.GetKeptFileRequest{SetId: set.Id, Path: "../evil.txt"})
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = b.tasks.GetKeptFile(ctx(t), &batchv1.GetKeptFileRequest{SetId: set.Id, Path: "nope.txt"})
	wantCode(t, err, connect.CodeNotFound)
}

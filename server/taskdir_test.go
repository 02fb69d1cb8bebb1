package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"

	batchv1 "batchd/proto/batch/v1"
	"batchd/server"
)

// A task's --dir must be absolute and outside the server's data directory
// (a link into it too); with --task-dirs it must be under one of them.
func TestTaskDirs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	allowed := filepath.Join(root, "scratch")
	other := filepath.Join(root, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(root, "data")
	link := filepath.Join(allowed, "data-link")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	disclose := func(b *bundle, dir string) error {
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}, {Argv: []string{"true"}, Dir: dir}}})
		return err
	}
	discloseArray := func(b *bundle, dir string) error {
		_, err := b.tasks.Disclose(ctx(t), &batchv1.DiscloseRequest{Array: &batchv1.TaskArray{First: 0, Last: 3, Spec: &batchv1.TaskSpec{Argv: []string{"true"}, Dir: dir}}})
		return err
	}

	b := setup(t, options{dir: data})
	for _, tc := range []struct {
		dir  string
		want connect.Code
	}{
		{"", ok}, {other, ok}, {"/", ok}, {"rel/dir", connect.CodeInvalidArgument}, {"./data", connect.CodeInvalidArgument},
		{data, connect.CodeInvalidArgument}, {filepath.Join(data, "worker"), connect.CodeInvalidArgument},
		{filepath.Join(data, "..", "data", "x"), connect.CodeInvalidArgument}, {link, connect.CodeInvalidArgument},
		{data + "2", ok},
	} {
		err := disclose(b, tc.dir)
		if (tc.want == ok) != (err == nil) || (err != nil && connect.CodeOf(err) != tc.want) {
			t.Errorf("--dir %q: %v, want %v", tc.dir, err, tc.want)
		}
	}
	wantCode(t, discloseArray(b, filepath.Join(data, "worker")), connect.CodeInvalidArgument)
	b.close()

	b = setup(t, options{dir: data, taskDirs: []string{allowed}})
	if err := disclose(b, filepath.Join(allowed, "job1")); err != nil {
		t.Fatalf("under an allowed root: %v", err)
	}
	wantCode(t, disclose(b, other), connect.CodeInvalidArgument)
	wantCode(t, disclose(b, link), connect.CodeInvalidArgument)
	wantCode(t, discloseArray(b, other), connect.CodeInvalidArgument)

	if _, err := server.New(server.Config{DataDir: t.TempDir(), TaskDirs: []string{"relative"}}); err == nil {
		t.Fatal("a relative --task-dirs root was accepted")
	}
}

package pool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSlurm writes sbatch, scontrol and scancel scripts into a directory:
// sbatch records its arguments and environment and prints job id 42;
// scontrol and scancel record their arguments.
func fakeSlurm(t *testing.T) (bin, log string) {
	t.Helper()
	bin, log = t.TempDir(), filepath.Join(t.TempDir(), "log")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("sbatch", `echo "sbatch $*" >>`+log+`; env >`+log+`.env; cat >`+log+`.script; echo 42`+"\n")
	write("scontrol", `echo "scontrol $*" >>`+log+"\n")
	write("scancel", `echo "scancel $*" >>`+log+"\n")
	return bin, log
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A pilot is submitted as it is, not held (a released job waits for
// Slurm's next scheduling pass); its own token is minted for its worker
// name as soon as sbatch answers, and written into its file. The pool's
// token never reaches sbatch's environment.
func TestSlurmSubmitHandsToken(t *testing.T) {
	bin, log := fakeSlurm(t)
	s := &Slurm{Pool: "p", Dir: t.TempDir(), Bin: bin}
	file := filepath.Join(t.TempDir(), "pilot.token")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATCH_WORKER_TOKEN", "bd_pool_secret")
	var minted []string
	id, err := s.Submit(context.Background(), PilotSpec{Class: Requested, Slots: 1, Argv: []string{"batchd", "worker", "--token-file", file},
		Mint: func(_ context.Context, w string) error {
			minted = append(minted, w)
			return os.WriteFile(file, []byte("bdp_pilot42"), 0o600)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if id != "42" || len(minted) != 1 || minted[0] != "slurm-42" {
		t.Fatalf("id %q, minted for %v", id, minted)
	}
	got := readLog(t, log)
	if !strings.Contains(got, "sbatch ") || strings.Contains(got, "--hold") || strings.Contains(got, "scontrol") {
		t.Fatalf("the pilot was held or released; log:\n%s", got)
	}
	if env := readLog(t, log+".env"); strings.Contains(env, "bd_pool_secret") {
		t.Fatalf("the pool's token reached sbatch's environment:\n%s", env)
	}
}

// When minting fails, the job is cancelled.
func TestSlurmSubmitMintFails(t *testing.T) {
	bin, log := fakeSlurm(t)
	s := &Slurm{Pool: "p", Dir: t.TempDir(), Bin: bin}
	_, err := s.Submit(context.Background(), PilotSpec{Class: Requested, Slots: 1, Argv: []string{"batchd", "worker"},
		Mint: func(context.Context, string) error { return errors.New("permission denied") }})
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("submit: %v", err)
	}
	if got := readLog(t, log); !strings.Contains(got, "scancel 42") {
		t.Fatalf("log:\n%s", got)
	}
}

// The pool reports an ended pilot as ended, so that the server revokes
// its token.
func TestPoolReportsEnded(t *testing.T) {
	e, s := &engine{pilots: []Pilot{{ID: "a", State: Ended, Raw: "COMPLETED"}, {ID: "b", State: Running, Raw: "RUNNING"}}}, &server{}
	p := newTestPool(t, Config{}, e, s)
	if err := p.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	ps := s.reports[0].Pilots
	if len(ps) != 2 || !ps[0].Ended || ps[1].Ended {
		t.Fatalf("reported %v", ps)
	}
}

func TestSlurmDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90": 90 * time.Minute, "5:30": 5*time.Minute + 30*time.Second, "1:00:00": time.Hour,
		"2-3": 51 * time.Hour, "1-0:30": 24*time.Hour + 30*time.Minute, "1-2:3:4": 26*time.Hour + 3*time.Minute + 4*time.Second,
	} {
		if got, err := SlurmDuration(in); err != nil || got != want {
			t.Errorf("SlurmDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "1:2:3:4", "-1", "1-a"} {
		if _, err := SlurmDuration(in); err == nil {
			t.Errorf("SlurmDuration(%q): no error", in)
		}
	}
}

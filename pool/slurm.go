package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Slurm is the Engine for Slurm, through its commands: sbatch --parsable
// submits, squeue lists (by the pool's job names, every state Slurm still
// keeps), scancel cancels. The commands find the cluster as usual
// (SLURM_CONF or the site's configuration).
type Slurm struct {
	// Pool names the jobs: batchd-POOL-requested and batchd-POOL-disclosed.
	Pool string
	// Partition, QOS and Account for requested pilots ("" = Slurm's default).
	Partition, QOS, Account string
	// DisclosedPartition and DisclosedQOS for disclosed pilots ("" = as
	// requested pilots), typically preemptible capacity.
	DisclosedPartition, DisclosedQOS string
	// Time is the pilots' time limit in Slurm's format ("" = the
	// partition's default).
	Time string
	// Mem is each pilot's memory in sbatch's format (--mem, e.g. 16G; ""
	// = the partition's default). The pilot's worker offers its job's
	// allocation to tasks that ask for memory (--memory slurm).
	Mem string
	// Output is the pilots' log file (sbatch --output; default
	// batchd-pilot-%j.out in Dir).
	Output string
	// Dir is where pilots start (sbatch --chdir; default the pool's
	// working directory).
	Dir string
	// Args are extra sbatch arguments, added last.
	Args []string
	// User whose jobs are listed (default: the current user).
	User string
	// Bin is where sbatch, squeue and scancel are ("" = PATH).
	Bin string
	// SignalAt is how long before its time limit Slurm sends SIGTERM to
	// the pilot's batch shell only (sbatch --signal=B:TERM@SECONDS;
	// default PilotSignalAt). The shell passes it to the worker, which
	// hands its copies back (SIGKILL) before Slurm signals them: a copy's
	// SIGTERM trap never runs, so no copy can end "successfully" of the
	// pilot's end before the worker knows of it. A site whose slurm.conf
	// sets SlurmctldParameters=preempt_send_user_signal gets the same
	// order on preemption with a GraceTime.
	SignalAt time.Duration
}

// PilotSignalAt is Slurm.SignalAt's default: the worker's default end
// margin, so the pilot's SIGTERM comes about when it stops taking copies.
const PilotSignalAt = 30 * time.Second

// Name is "slurm".
func (s *Slurm) Name() string { return "slurm" }

// WorkerName is "slurm-" + the job id: the pilot script passes
// --name slurm-$SLURM_JOB_ID to the worker.
func (s *Slurm) WorkerName(id string) string { return "slurm-" + id }

func (s *Slurm) jobName(c Class) string { return "batchd-" + s.Pool + "-" + string(c) }

func (s *Slurm) cmd(name string) string {
	if s.Bin != "" {
		return s.Bin + "/" + name
	}
	return name
}

// run runs a Slurm command and returns its standard output; an error
// carries the command's standard error.
func (s *Slurm) run(ctx context.Context, env []string, stdin string, name string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, s.cmd(name), args...)
	c.Env = env
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		if msg == "" {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return "", fmt.Errorf("%s: %s", name, strings.ReplaceAll(msg, "\n", "; "))
	}
	return out.String(), nil
}

// Script is the pilot's batch script. It runs the worker with argv
// (each argument quoted for the shell), named after the job and told the
// job's end (--ends-at slurm: it takes no copy that would run past the
// time limit) and offering the job's memory (--memory slurm: Slurm's
// SLURM_MEM_PER_NODE, else the machine's), and waits for it, passing SIGTERM on. Once the worker has
// ended, however it ended (a SIGKILL, the out-of-memory killer), the
// script kills what the worker's copies left running (--kill-leftovers):
// their leaders die with the worker, but what they forked would run on
// reparented to init, where Slurm's proctrack/linuxproc no longer finds
// it. The job then ends with the worker's status, and the pilot's
// allocation goes back.
func (s *Slurm) Script(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quoteArg(a)
	}
	worker := strings.Join(q, " ") + ` --name "slurm-$SLURM_JOB_ID"`
	bin := "batchd"
	if len(q) > 0 {
		bin = q[0]
	}
	// The worker's state directory, where its copies' scratch lies.
	leftovers := ` --name "slurm-$SLURM_JOB_ID"`
	for i, a := range argv {
		if a == "--state-dir" && i+1 < len(argv) {
			leftovers = " --state-dir " + quoteArg(argv[i+1])
		} else if v, ok := strings.CutPrefix(a, "--state-dir="); ok {
			leftovers = " --state-dir " + quoteArg(v)
		}
	}
	return "#!/bin/sh\n# a batchd pilot: one worker for the job's allocation\n" +
		worker + " --ends-at slurm --memory slurm --gpus slurm --partition slurm &\n" +
		"w=$!\n" +
		"trap 'kill -TERM $w 2>/dev/null' TERM INT\n" +
		"while :; do wait $w; rc=$?; kill -0 $w 2>/dev/null || break; done\n" +
		bin + " worker --kill-leftovers" + leftovers + "\n" +
		"exit $rc\n"
}

// SbatchArgs are the arguments sbatch gets for a pilot of spec (the
// script comes on standard input; the token in a file the script names).
func (s *Slurm) SbatchArgs(spec PilotSpec) []string {
	args := []string{"--parsable", "--job-name=" + s.jobName(spec.Class), "--ntasks=1",
		"--cpus-per-task=" + strconv.Itoa(max(1, spec.Slots)), "--export=ALL"}
	part, qos := s.Partition, s.QOS
	if spec.Class == Disclosed {
		if s.DisclosedPartition != "" {
			part = s.DisclosedPartition
		}
		if s.DisclosedQOS != "" {
			qos = s.DisclosedQOS
		}
	}
	if spec.Partition != "" {
		part = spec.Partition // the partition the queued work names (route.go)
	}
	if part != "" {
		args = append(args, "--partition="+part)
	}
	if qos != "" {
		args = append(args, "--qos="+qos)
	}
	if s.Account != "" {
		args = append(args, "--account="+s.Account)
	}
	if spec.Time > 0 {
		args = append(args, "--time="+slurmLimit(spec.Time))
	} else if s.Time != "" {
		args = append(args, "--time="+s.Time)
	}
	if s.Mem != "" {
		args = append(args, "--mem="+s.Mem)
	}
	if spec.GPUs > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(spec.GPUs))
	}
	at := s.SignalAt
	if at <= 0 {
		at = PilotSignalAt
	}
	args = append(args, fmt.Sprintf("--signal=B:TERM@%d", int(at.Round(time.Second)/time.Second)))
	out := s.Output
	if out == "" {
		out = "batchd-pilot-%j.out"
	}
	args = append(args, "--output="+out)
	if s.Dir != "" {
		args = append(args, "--chdir="+s.Dir)
	}
	return append(args, s.Args...)
}

// Submit runs sbatch --parsable with the pilot script on standard input and
// spec.Env added to the environment (sbatch --export=ALL passes it on).
// The pool's own tokens (BATCH_WORKER_TOKEN, BATCH_TOKEN) are left out
// of it: Slurm would keep them where the job's user, and so the tasks on
// the pilot, can read them. With spec.Mint, spec.Mint writes the pilot's
// token once the job id names its worker. The job is not held for it:
// Slurm tries to start a job when it is submitted, where a held job that
// is released waits for the next scheduling pass (up to sched_interval
// or bf_interval), so the pilot's worker waits for its token file to be
// filled (--token-wait) instead. When minting fails, the job is
// cancelled (the pool removes the file, and the worker gives up).
func (s *Slurm) Submit(ctx context.Context, spec PilotSpec) (string, error) {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "BATCH_WORKER_TOKEN=") || strings.HasPrefix(kv, "BATCH_TOKEN=")
	})
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	out, err := s.run(ctx, env, s.Script(spec.Argv), "sbatch", s.SbatchArgs(spec)...)
	if err != nil {
		return "", err
	}
	// --parsable: "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if id == "" {
		return "", errors.New("sbatch printed no job id")
	}
	if spec.Mint == nil {
		return id, nil
	}
	// The token names the pilot's worker, which only the job id tells.
	if err := spec.Mint(ctx, s.WorkerName(id)); err != nil {
		if cerr := s.Cancel(ctx, []string{id}); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return "", err
	}
	return id, nil
}

// squeueFormat is what List asks squeue for, in this order.
const squeueFormat = "%i|%T|%r|%N|%C|%V|%S|%P|%j"

// List runs squeue for the pool's job names in every state Slurm keeps.
func (s *Slurm) List(ctx context.Context) ([]Pilot, error) {
	u := s.User
	if u == "" {
		cu, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("current user: %w", err)
		}
		u = cu.Username
	}
	out, err := s.run(ctx, nil, "", "squeue", "-h", "-t", "all", "-u", u,
		"--name="+s.jobName(Requested)+","+s.jobName(Disclosed), "-o", squeueFormat)
	if err != nil {
		return nil, err
	}
	return s.ParseSqueue(out), nil
}

// ParseSqueue reads squeue's lines in squeueFormat.
func (s *Slurm) ParseSqueue(out string) []Pilot {
	var ps []Pilot
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 9 {
			continue
		}
		p := Pilot{ID: f[0], Raw: f[1], Reason: f[2], Node: f[3], Partition: f[7], Class: Requested}
		if p.Reason == "None" {
			p.Reason = ""
		}
		if strings.HasSuffix(f[8], "-"+string(Disclosed)) {
			p.Class = Disclosed
		}
		p.Slots, _ = strconv.Atoi(f[4])
		p.Submitted = slurmTime(f[5])
		p.State, p.Failed = slurmState(p.Raw, p.Reason)
		if p.State != Pending {
			p.Started = slurmTime(f[6])
		}
		ps = append(ps, p)
	}
	return ps
}

// Cancel runs scancel on the ids.
func (s *Slurm) Cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.run(ctx, nil, "", "scancel", ids...)
	return err
}

// slurmTime parses squeue's times (local time, ISO without zone).
func slurmTime(v string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", v, time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// hopeless are pending reasons that do not clear by waiting.
var hopeless = []string{"PartitionDown", "PartitionInactive", "PartitionNodeLimit", "PartitionTimeLimit",
	"InvalidAccount", "InvalidQOS", "BadConstraints", "DependencyNeverSatisfied", "JobHeldAdmin",
	"ReqNodeNotAvail", "NodeDown", "AccountNotAllowed", "QOSNotAllowed"}

// slurmState reduces a Slurm job state (and reason) to the pool's.
func slurmState(raw, reason string) (State, bool) {
	switch raw {
	case "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD":
		r, _, _ := strings.Cut(reason, ",")
		return Pending, slices.Contains(hopeless, strings.TrimSpace(r)) || strings.HasPrefix(reason, "ReqNodeNotAvail")
	case "RUNNING", "CONFIGURING", "RESIZING", "SUSPENDED":
		return Running, false
	case "COMPLETING", "SIGNALING", "STAGE_OUT", "STOPPED":
		return Ending, false
	case "FAILED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY":
		return Ended, true
	default: // COMPLETED, CANCELLED, TIMEOUT, PREEMPTED, DEADLINE, REVOKED, SPECIAL_EXIT
		return Ended, false
	}
}

// SlurmDuration parses a time limit in Slurm's formats: "minutes",
// "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes" and "days-hours:minutes:seconds".
func SlurmDuration(v string) (time.Duration, error) {
	bad := fmt.Errorf("bad Slurm time %q", v)
	days := 0
	rest := v
	if d, r, ok := strings.Cut(v, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, rest = n, r
	}
	var f []int
	for _, p := range strings.Split(rest, ":") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, bad
		}
		f = append(f, n)
	}
	var h, m, s int
	switch {
	case len(f) > 3:
		return 0, bad
	case v != rest: // days-hours[:minutes[:seconds]]
		h = f[0]
		if len(f) > 1 {
			m = f[1]
		}
		if len(f) > 2 {
			s = f[2]
		}
	case len(f) == 1:
		m = f[0]
	case len(f) == 2:
		m, s = f[0], f[1]
	default:
		h, m, s = f[0], f[1], f[2]
	}
	return time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second, nil
}

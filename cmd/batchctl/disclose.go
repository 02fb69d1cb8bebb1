package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/cmd/internal/cliarg"
	"batchd/sched"
)

func discloseCommand() *cli.Command {
	return &cli.Command{
		Name:      "disclose",
		Usage:     "disclose tasks you may need (a new task set, or more tasks for one)",
		ArgsUsage: "[-- COMMAND ARGS...]",
		Description: `Tasks come from the arguments after -- (one task), from --file (one shell
command per line, run with sh -c; blank lines and lines starting with # are
skipped; - reads stdin) or from --spec (a JSON file with every TaskSpec field).
Disclosed tasks run on idle slots; nothing is billed until you request them.

Examples:

   batchctl disclose -- ./render.sh frame-001
   batchctl disclose --name frames --estimate 30s --file commands.txt
   batchctl disclose --set 4 --file more.txt          # append to set 4
   batchctl disclose --request --timeout 1m -- make test
   batchctl disclose --max-running 4 --file jobs.txt   # at most 4 run at once
   batchctl disclose --cpus 4 --memory 8G -- ./solve big.dat
   batchctl disclose --retries 2 --retry-on 75,timeout --file jobs.txt

--retries N lets the server retry each task in place up to N times (same set,
same index, the next attempt; the task sees BATCH_TASK_ATTEMPT) when an
attempt ends in a way --retry-on names: exit codes (1-255), nonzero (any
failure), timeout, lost (a re-run after a worker was lost becomes a new
attempt; lost copies run again anyway). --retry-on defaults to
nonzero,timeout. Each requested attempt is billed once; see batchctl retry.

A --spec file is a list of tasks, or an object with a name, a retry policy
and tasks:

   {"name": "sweep", "retries": 2, "retry_on": "nonzero,timeout", "tasks": [
     {"argv": ["./sim", "--p", "0.1"], "env": {"SEED": "1"}, "dir": "/tmp",
      "estimate_seconds": 60, "no_speculation": true, "timeout_seconds": 600,
      "cpus": 2, "memory_mb": 4096}]}

Prints the set id and the new tasks' references (SET/FIRST..LAST); -q prints
the set id only.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Aliases: []string{"n"}, Usage: "name of a new task set"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read one shell command per line from `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "spec", Usage: "read tasks from a JSON `FILE` (- for stdin)"},
			&cli.Int64Flag{Name: "set", Usage: "append to task set `ID` instead of creating one"},
			&cli.StringFlag{Name: "estimate", Aliases: []string{"e"}, Usage: "estimated run time of each task (e.g. 30s, 2m, or seconds)"},
			&cli.StringFlag{Name: "timeout", Usage: "kill a copy after this run time and finish the task as timed out (e.g. 10m)"},
			&cli.BoolFlag{Name: "no-speculation", Usage: "never run two copies of a task at once"},
			&cli.StringSliceFlag{Name: "env", Usage: "add `KEY=VALUE` to each task's environment (repeatable)"},
			&cli.StringFlag{Name: "dir", Usage: "working `DIR` of each task on the worker (default: a scratch dir per copy)"},
			&cli.BoolFlag{Name: "request", Aliases: []string{"r"}, Usage: "request the tasks at once (a plain batch submission)"},
			&cli.IntFlag{Name: "cpus", Usage: "slots of one worker each task takes (default 1; the scheduler accounts them, see README, Resources)"},
			&cli.StringFlag{Name: "memory", Usage: "memory each task needs on its worker, e.g. 512M or 2G; it runs only where a worker offers that much free"},
			&cli.IntFlag{Name: "max-running", Usage: "run at most `N` copies of the set at once, speculative copies included (0: no cap; with --set: change the set's cap)"},
			&cli.IntFlag{Name: "retries", Usage: "retry each failed task in place up to `N` times (0 to 100; with --set: change the set's policy)"},
			&cli.StringFlag{Name: "retry-on", Usage: "what --retries retries: `LIST` of exit codes, nonzero, timeout, lost (default " + sched.DefaultRetryOn + ")"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the set id"},
			jsonFlag(),
		},
		Action: disclose,
	}
}

// specFile is the --spec format: a list of tasks or an object with them.
type specFile struct {
	Name    string     `json:"name"`
	Retries int32      `json:"retries"`
	RetryOn string     `json:"retry_on"`
	Tasks   []specView `json:"tasks"`
}

func disclose(c *cli.Context) error {
	defaults, err := defaultSpec(c)
	if err != nil {
		return err
	}
	var specs []sched.TaskSpec
	name := c.String("name")
	retries, retryOn := int32(c.Int("retries")), c.String("retry-on")
	sources := 0
	if c.Args().Present() {
		sources++
		specs = append(specs, withDefaults(sched.TaskSpec{Argv: c.Args().Slice()}, defaults))
	}
	if f := c.String("file"); f != "" {
		sources++
		data, err := readInput(c, f)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			specs = append(specs, withDefaults(sched.TaskSpec{Argv: []string{"sh", "-c", line}}, defaults))
		}
		if err := sc.Err(); err != nil {
			return usageErr("read %s: %v", f, err)
		}
	}
	if f := c.String("spec"); f != "" {
		sources++
		data, err := readInput(c, f)
		if err != nil {
			return err
		}
		var sf specFile
		trimmed := bytes.TrimSpace(data)
		// Unknown fields are refused in both forms: a misspelt field
		// ("estimate" for "estimate_seconds") must not vanish silently.
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if len(trimmed) > 0 && trimmed[0] == '[' {
			err = dec.Decode(&sf.Tasks)
		} else {
			err = dec.Decode(&sf)
		}
		if err != nil {
			return usageErr("read %s: not a task spec: %v", f, err)
		}
		if name == "" {
			name = sf.Name
		}
		if retries == 0 && retryOn == "" {
			retries, retryOn = sf.Retries, sf.RetryOn
		}
		for _, t := range sf.Tasks {
			specs = append(specs, withDefaults(sched.TaskSpec{
				Argv: t.Argv, Env: t.Env, Dir: t.Dir, EstimateSeconds: t.EstimateSeconds,
				NoSpeculation: t.NoSpeculation, TimeoutSeconds: t.TimeoutSeconds, DeadlineSeconds: t.DeadlineSeconds,
				Cpus: t.Cpus, MemoryMB: t.MemoryMB,
			}, defaults))
		}
	}
	if sources == 0 {
		return usageErr("nothing to disclose: give a command after --, a --file of commands, or a --spec file (see batchctl disclose --help)")
	}
	if sources > 1 {
		return usageErr("give tasks in one way only: a command after --, --file or --spec")
	}
	if len(specs) == 0 {
		return usageErr("nothing to disclose: the input has no tasks")
	}
	maxRunning := c.Int("max-running")
	if maxRunning < 0 || maxRunning > 1<<30 {
		return usageErr("--max-running %d: want a number of copies, 1 or more (0: no cap)", maxRunning)
	}
	policy, err := retryPolicy(retries, retryOn)
	if err != nil {
		return err
	}
	res, err := newClient(c).Disclose(c.Context, client.DiscloseInput{
		Set:        sched.SetID(c.Int64("set")),
		Name:       name,
		Tasks:      specs,
		Request:    c.Bool("request"),
		MaxRunning: int32(maxRunning),
		Retry:      policy,
	})
	if err != nil {
		return err
	}
	w := c.App.Writer
	if asJSON(c) {
		return writeJSON(w, struct {
			Set        setView `json:"set"`
			FirstIndex int32   `json:"first_index"`
			Count      int32   `json:"count"`
			Requested  bool    `json:"requested"`
			Replayed   bool    `json:"replayed"`
		}{viewSet(res.Set), res.FirstIndex, res.Count, c.Bool("request"), res.Replayed})
	}
	if c.Bool("quiet") {
		_, err := fmt.Fprintln(w, res.Set.ID)
		return err
	}
	verb := "disclosed"
	if c.Bool("request") {
		verb = "disclosed and requested"
	}
	label := ""
	if res.Set.Name != "" {
		label = fmt.Sprintf(" %q", res.Set.Name)
	}
	_, err = fmt.Fprintf(w, "set %d%s: %s %s (%s)\n", res.Set.ID, label, verb, refRange(res.Set.ID, res.FirstIndex, res.Count), plural(int64(res.Count), "task"))
	return err
}

// defaultSpec returns the per-task settings given by flags.
func defaultSpec(c *cli.Context) (sched.TaskSpec, error) {
	var d sched.TaskSpec
	var err error
	if d.EstimateSeconds, err = parseSeconds("estimate", c.String("estimate")); err != nil {
		return d, err
	}
	if d.TimeoutSeconds, err = parseSeconds("timeout", c.String("timeout")); err != nil {
		return d, err
	}
	d.NoSpeculation = c.Bool("no-speculation")
	if n := c.Int("cpus"); n < 0 || n > sched.MaxCpus {
		return d, usageErr("--cpus %d: want 1 to %d slots of one worker", n, sched.MaxCpus)
	} else {
		d.Cpus = int32(n)
	}
	mem, err := cliarg.ParseMiB(c.String("memory"))
	if err != nil {
		return d, usageErr("--memory: %v", err)
	}
	d.MemoryMB = mem
	d.Dir = c.String("dir")
	for _, kv := range c.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return d, usageErr("--env %q: want KEY=VALUE", kv)
		}
		if d.Env == nil {
			d.Env = map[string]string{}
		}
		d.Env[k] = v
	}
	return d, nil
}

// withDefaults fills the zero fields of s from d; env maps merge, s winning.
func withDefaults(s, d sched.TaskSpec) sched.TaskSpec {
	if s.EstimateSeconds == 0 {
		s.EstimateSeconds = d.EstimateSeconds
	}
	if s.TimeoutSeconds == 0 {
		s.TimeoutSeconds = d.TimeoutSeconds
	}
	if s.Dir == "" {
		s.Dir = d.Dir
	}
	s.NoSpeculation = s.NoSpeculation || d.NoSpeculation
	if s.Cpus == 0 {
		s.Cpus = d.Cpus
	}
	if s.MemoryMB == 0 {
		s.MemoryMB = d.MemoryMB
	}
	if len(d.Env) > 0 {
		env := map[string]string{}
		for k, v := range d.Env {
			env[k] = v
		}
		for k, v := range s.Env {
			env[k] = v
		}
		s.Env = env
	}
	return s
}

// parseSeconds reads "30s", "2m", "1h30m" or a plain number of seconds.
func parseSeconds(flag, s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		return f, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usageErr("--%s %q: want a duration like 30s, 2m or 1h, or a number of seconds", flag, s)
	}
	return d.Seconds(), nil
}

// readInput reads a file, or stdin for "-".
func readInput(c *cli.Context, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = c.App.Reader
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, usageErr("read %s: %v", name, err)
	}
	return data, nil
}

// refRange formats count tasks from first as SET/FIRST or SET/FIRST..LAST.
func refRange(set sched.SetID, first, count int32) string {
	if count == 1 {
		return fmt.Sprintf("task %d/%d", set, first)
	}
	return fmt.Sprintf("tasks %d/%d..%d", set, first, first+count-1)
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// retryPolicy reads --retries and --retry-on (or the spec file's retries
// and retry_on).
func retryPolicy(retries int32, retryOn string) (sched.RetryPolicy, error) {
	if retries < 0 || retries > sched.MaxRetries {
		return sched.RetryPolicy{}, usageErr("--retries %d: want 0 to %d", retries, sched.MaxRetries)
	}
	if retries == 0 {
		if retryOn != "" {
			return sched.RetryPolicy{}, usageErr("--retry-on %q needs --retries N: how many times to retry", retryOn)
		}
		return sched.RetryPolicy{}, nil
	}
	if retryOn == "" {
		retryOn = sched.DefaultRetryOn
	}
	p, err := sched.ParseRetryOn(retryOn)
	if err != nil {
		return p, usageErr("--retry-on: %s", sched.ErrorMessage(err))
	}
	if p.RetryOn() == "" {
		return p, usageErr("--retry-on %q names nothing to retry on", retryOn)
	}
	p.Retries = retries
	return p, nil
}

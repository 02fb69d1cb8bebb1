package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
command per line, run with sh -c; a line ending in \ goes on into the next,
as in a script; blank lines and lines starting with # are skipped; the
page's form splits its commands by the same rule; - reads stdin), from
--array with a command after -- (one task per value, like Slurm's --array)
or from --spec (a JSON file with every TaskSpec field). Disclosed tasks run
on idle slots; nothing is billed until you request them.

Each task runs in a scratch directory of its own on the worker, not in the
directory where you run batchctl, unless --dir DIR says where: a program
named by a relative path (./sim.sh) is looked up there. Give an absolute
path or --dir; a task that exits 127 this way gets a hint from request,
status and output.

The scratch directory is removed when the copy ends, with what the task
wrote there, unless --keep PATTERN names it (like HTCondor's
transfer_output_files): the regular files matching the pattern are kept with
the task's result, readable once it is requested, as its output is. A pattern
is a glob relative to the scratch directory, one directory level per
component (out/*.csv, results/run-?/*.dat; no **, no absolute paths, no ..).
Symlinks, FIFOs, directories and hard links to files elsewhere are never
kept, nor files over the server's caps (batchd serve --keep-max-task, 16 MiB
per task, and --keep-max-user, 1 GiB per user, by default): each is listed
with the reason, as is a pattern that matched nothing. With --dir, patterns
still name files in the scratch directory ($HOME), not in DIR.

   batchctl disclose --request --keep result.txt -- sh -c 'echo data > result.txt'
   batchctl output --files 5/0                   # what was kept, and what not
   batchctl output 5 --dir results/               # results/5/0/result.txt, ...

--array LOW-HIGH[:STEP] makes one task per value LOW, LOW+STEP, ... up to
HIGH. Each task runs the words after -- as its argv, exactly as given (no
shell reads them again); a single word is a shell line, run as SHELL -c LINE
(see --shell), so quote it to keep $ for the task. Each task sees its value
as $BATCH_ARRAY_VALUE and its place in the set as $BATCH_TASK_INDEX (the same
when the set is new and the range starts at 0 by step 1). The server keeps
the array in one piece: 100,000 tasks cost a few bytes each.

   batchctl disclose --array 0-299 -- './sim --seed $BATCH_ARRAY_VALUE'
   batchctl disclose --array 0-9 -- sh -c 'echo seed=$BATCH_ARRAY_VALUE'
   batchctl disclose --array 0-1000:10 --shell bash -- 'echo $((BATCH_ARRAY_VALUE * RANDOM))'

--shell picks the shell that runs --file lines and one-word array lines
(default sh, which is dash on Debian: use --shell bash for $RANDOM, arrays or
[[ ]]).

Examples:

   batchctl disclose -- ./render.sh frame-001
   batchctl disclose --name frames --estimate 30s --file commands.txt
   batchctl disclose --set 4 --file more.txt          # append to set 4
   batchctl disclose --request --timeout 1m -- make test
   batchctl disclose --max-running 4 --file jobs.txt   # at most 4 run at once
   batchctl disclose --cpus 4 --memory 8G -- ./solve big.dat
   batchctl disclose --retries 2 --retry-on 75,timeout --file jobs.txt
   batchctl disclose --stop-on-output '^FOUND' --array 0-999 -- ./search.sh

--retries N lets the server retry each task in place up to N times (same set,
same index, the next attempt; the task sees BATCH_TASK_ATTEMPT) when an
attempt ends in a way --retry-on names: exit codes (1-255), nonzero (any
failure), timeout, lost (a re-run after a worker was lost becomes a new
attempt; lost copies run again anyway). --retry-on defaults to
nonzero,timeout. Each requested attempt is billed once; see batchctl retry.

` + stopHelp + `

With --set and no tasks, --max-running, --retries or a stop flag change the
set in place; batchctl update changes any part of it (a cap of 0 too).

A --spec file is a list of tasks, or an object with a name, a retry policy,
a stop rule (stop_on_success, stop_on_exit, stop_on_output, stop_after; the
--stop-* flags win) and tasks; a task gives argv, or a shell line as "command" (run by the set's
"shell", default sh). Instead of tasks the object may hold an array: a
range, and a command or argv with the other task fields:

   {"name": "sweep", "retries": 2, "retry_on": "nonzero,timeout",
    "stop_on_output": "converged", "tasks": [
     {"argv": ["./sim", "--p", "0.1"], "env": {"SEED": "1"}, "dir": "/tmp",
      "estimate_seconds": 60, "no_speculation": true, "timeout_seconds": 600,
      "cpus": 2, "memory_mb": 4096, "keep": ["out/*.csv"]},
     {"command": "./sim --p 0.2 > out-$BATCH_COPY_ID"}]}

   {"name": "study", "shell": "bash",
    "array": {"range": "0-299:2", "command": "./sim --seed $BATCH_ARRAY_VALUE",
              "estimate_seconds": 60}}

Prints the set id and the new tasks' references (SET/FIRST..LAST); -q prints
the set id only.
` + afterHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Aliases: []string{"n"}, Usage: "name of a new task set"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read one shell command per line from `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "spec", Usage: "read tasks from a JSON `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "array", Aliases: []string{"a"}, Usage: "one task per value of `LOW-HIGH[:STEP]` running the command after -- (its value in $BATCH_ARRAY_VALUE)"},
			&cli.StringFlag{Name: "shell", Value: "sh", Usage: "the `SHELL` that runs --file lines and a one-word array command, as SHELL -c LINE (e.g. bash)"},
			&cli.Int64Flag{Name: "set", Usage: "append to task set `ID` instead of creating one"},
			&cli.StringFlag{Name: "estimate", Aliases: []string{"e"}, Usage: "estimated run time of each task (e.g. 30s, 2m, or seconds)"},
			&cli.StringFlag{Name: "timeout", Usage: "kill a copy after this run time and finish the task as timed out (e.g. 10m)"},
			&cli.BoolFlag{Name: "no-speculation", Usage: "never run two copies of a task at once"},
			&cli.StringSliceFlag{Name: "env", Usage: "add `KEY=VALUE` to each task's environment (repeatable)"},
			&cli.StringFlag{Name: "dir", Usage: "working `DIR` of each task on the worker (default: a scratch dir of its own per copy, where ./relative paths are looked up); " +
				"a relative DIR is taken from here. The server refuses its data directory and, with batchd serve --task-dirs, anything outside the roots it names"},
			&cli.StringSliceFlag{Name: "keep", Aliases: []string{"k"}, Usage: "keep the files matching `PATTERN` (a glob relative to the task's scratch directory, e.g. 'out/*.csv'; repeatable, and a comma also separates patterns) " +
				"with the result: batchctl output --files, --dir, --tar"},
			&cli.BoolFlag{Name: "request", Aliases: []string{"r"}, Usage: "request the tasks at once (a plain batch submission)"},
			&cli.IntFlag{Name: "cpus", Usage: "`N` slots of one worker for each task (the scheduler accounts them, see README, Resources)", DefaultText: "1"},
			&cli.StringFlag{Name: "pool", Usage: "run the set's copies only on workers of pool `NAME` (batchd worker --pool; local: the server's own slots); a new set only"},
			&cli.StringFlag{Name: "partition", Usage: "run the set's copies only on workers in batch-system partition `NAME` (a Slurm pool starts pilots for it there); a new set only"},
			&cli.IntFlag{Name: "gpus", Usage: "`N` GPUs of one worker for each task; the worker gives each copy devices of its own (CUDA_VISIBLE_DEVICES)"},
			&cli.StringFlag{Name: "memory", Usage: "memory each task needs on its worker, e.g. 512M or 2G; it runs only where a worker offers that much free"},
			&cli.IntFlag{Name: "max-running", Usage: "run at most `N` copies of the set at once, speculative copies included (0: no cap; with --set: change the set's cap)"},
			&cli.IntFlag{Name: "retries", Usage: "retry each failed task in place up to `N` times (0 to 100; with --set: change the set's policy)"},
			&cli.StringFlag{Name: "retry-on", Usage: "what --retries retries: `LIST` of exit codes, nonzero, timeout, lost (default " + sched.DefaultRetryOn + ")"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the set id"},
			jsonFlag(),
		}, append(stopFlags(), afterFlags()...)...),
		Action: disclose,
	}
}

// specFile is the --spec format: a list of tasks or an object with them
// (or with an array).
type specFile struct {
	Name    string `json:"name"`
	Shell   string `json:"shell"`
	Retries int32  `json:"retries"`
	RetryOn string `json:"retry_on"`
	// The set's stop rule, as the --stop-* flags (which win when given).
	StopOnSuccess bool       `json:"stop_on_success"`
	StopOnExit    string     `json:"stop_on_exit"`
	StopOnOutput  string     `json:"stop_on_output"`
	StopAfter     int32      `json:"stop_after"`
	Tasks         []specTask `json:"tasks"`
	Array         *specArray `json:"array"`
}

// stopRule is the file's stop rule (the zero rule when it names none).
func (sf specFile) stopRule(f string) (sched.StopRule, error) {
	r := sched.StopRule{OnSuccess: sf.StopOnSuccess, OnOutput: sf.StopOnOutput, After: sf.StopAfter}
	if sf.StopOnExit != "" {
		var err error
		if r.OnExit, err = sched.ParseStopOnExit(sf.StopOnExit); err != nil {
			return r, usageErr("%s: stop_on_exit: %s", f, sched.ErrorMessage(err))
		}
	}
	if r.After < 0 || r.After > sched.MaxStopAfter {
		return r, usageErr("%s: stop_after %d: want a count of successes, 1 or more", f, r.After)
	}
	if err := r.Validate(); err != nil {
		return r, usageErr("%s: %s", f, sched.ErrorMessage(err))
	}
	return r, nil
}

// specTask is a task of a --spec file: argv, or a shell line as command.
type specTask struct {
	specView
	Command string `json:"command"`
}

// specArray is the array of a --spec file: a range and a task.
type specArray struct {
	specTask
	Range string `json:"range"`
}

// spec turns a --spec file's task into a spec, running a command with
// shell; what is the task's name in errors.
func (t specTask) spec(shell, what string) (sched.TaskSpec, error) {
	argv := t.Argv
	switch {
	case t.Command != "" && len(argv) > 0:
		return sched.TaskSpec{}, usageErr("%s: give argv or command, not both", what)
	case t.Command != "":
		argv = []string{shell, "-c", t.Command}
	case len(argv) == 0:
		return sched.TaskSpec{}, usageErr("%s: give argv or command", what)
	}
	return sched.TaskSpec{
		Argv: argv, Env: t.Env, Dir: t.Dir, EstimateSeconds: t.EstimateSeconds,
		NoSpeculation: t.NoSpeculation, TimeoutSeconds: t.TimeoutSeconds, DeadlineSeconds: t.DeadlineSeconds,
		Cpus: t.Cpus, MemoryMB: t.MemoryMB, GPUs: t.GPUs, Keep: t.Keep,
	}, nil
}

// parseArray reads --array's LOW-HIGH[:STEP] (or a single value N).
func parseArray(s string) (first, last, step int64, err error) {
	bad := func(why string) error {
		return usageErr("--array %q: %s: want LOW-HIGH[:STEP], e.g. 0-299 or 0-299:2", s, why)
	}
	if strings.TrimSpace(s) == "" {
		return 0, 0, 0, bad("empty range")
	}
	rng, stepPart, hasStep := strings.Cut(s, ":")
	step = 1
	if hasStep {
		if step, err = strconv.ParseInt(stepPart, 10, 64); err != nil {
			return 0, 0, 0, bad("the step is not a whole number")
		}
		if step <= 0 {
			return 0, 0, 0, bad(fmt.Sprintf("step %d: the step must be 1 or more", step))
		}
	}
	lo, hi, isRange := strings.Cut(rng, "-")
	if first, err = strconv.ParseInt(lo, 10, 64); err != nil || first < 0 {
		return 0, 0, 0, bad("LOW is not a whole number from 0")
	}
	last = first
	if isRange {
		if last, err = strconv.ParseInt(hi, 10, 64); err != nil || last < 0 {
			return 0, 0, 0, bad("HIGH is not a whole number from 0")
		}
	}
	if last < first {
		return 0, 0, 0, bad(fmt.Sprintf("the range is reversed (%d is above %d)", first, last))
	}
	return first, last, step, nil
}

func disclose(c *cli.Context) error {
	defaults, err := defaultSpec(c)
	if err != nil {
		return err
	}
	var (
		specs []sched.TaskSpec
		array *client.Array
	)
	name := c.String("name")
	retries, retryOn := int32(c.Int("retries")), c.String("retry-on")
	shell := c.String("shell")
	if strings.TrimSpace(shell) == "" {
		return usageErr("--shell is empty: name a shell such as sh or bash")
	}
	if err := flagsAfterCommand(c); err != nil {
		return err
	}
	sources := 0
	if r := c.String("array"); c.IsSet("array") {
		if !c.Args().Present() {
			return usageErr("--array needs the command each task runs, after --: e.g. batchctl disclose --array 0-9 -- 'echo $BATCH_ARRAY_VALUE'")
		}
		first, last, step, err := parseArray(r)
		if err != nil {
			return err
		}
		array = &client.Array{First: first, Last: last, Step: step, Spec: withDefaults(sched.TaskSpec{Argv: arrayArgv(shell, c.Args().Slice())}, defaults)}
		sources++
	} else if c.Args().Present() {
		sources++
		specs = append(specs, withDefaults(sched.TaskSpec{Argv: c.Args().Slice()}, defaults))
	}
	if f := c.String("file"); f != "" {
		sources++
		r, err := openInput(c, f)
		if err != nil {
			return err
		}
		err = splitCommands(r, maxFileTasks, func(line string) error {
			specs = append(specs, withDefaults(sched.TaskSpec{Argv: []string{shell, "-c", line}}, defaults))
			return nil
		})
		_ = r.Close()
		switch {
		case err == errTooManyLines:
			return usageErr("%s holds more than %d commands, the most one disclose takes: split it and append the rest with --set ID", f, maxFileTasks)
		case err != nil:
			return usageErr("read %s: %v", f, err)
		}
	}
	var specRule sched.StopRule
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
		if specRule, err = sf.stopRule(f); err != nil {
			return err
		}
		fileShell := shell
		if sf.Shell != "" && !c.IsSet("shell") {
			fileShell = sf.Shell
		}
		for i, t := range sf.Tasks {
			spec, err := t.spec(fileShell, fmt.Sprintf("%s: task %d", f, i))
			if err != nil {
				return err
			}
			specs = append(specs, withDefaults(spec, defaults))
		}
		if sf.Array != nil {
			if len(sf.Tasks) > 0 {
				return usageErr("%s: give tasks or an array, not both", f)
			}
			first, last, step, err := parseArray(sf.Array.Range)
			if err != nil {
				return usageErr("%s: array: %s", f, sched.ErrorMessage(err))
			}
			spec, err := sf.Array.spec(fileShell, f+": array")
			if err != nil {
				return err
			}
			array = &client.Array{First: first, Last: last, Step: step, Spec: withDefaults(spec, defaults)}
		}
	}
	rule, hasRule, err := stopRule(c)
	if err != nil {
		return err
	}
	if !hasRule && !specRule.IsZero() {
		rule, hasRule = specRule, true
	}
	changesSet := c.IsSet("set") && (c.Int("max-running") > 0 || retries > 0 || hasRule)
	if sources == 0 && changesSet {
		return changeSet(c, retries, retryOn, rule)
	}
	if sources == 0 && c.IsSet("set") && c.IsSet("max-running") {
		return usageErr("--max-running %d with --set and no tasks: to change the set in place use batchctl update %d --max-running %d", c.Int("max-running"), c.Int64("set"), c.Int("max-running"))
	}
	if sources == 0 {
		return usageErr("nothing to disclose: give a command after --, --array with a command, a --file of commands, or a --spec file (see batchctl disclose --help)")
	}
	if sources > 1 {
		return usageErr("give tasks in one way only: a command after --, --array, --file or --spec")
	}
	if len(specs) == 0 && array == nil {
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
	after, err := parseAfter(c)
	if err != nil {
		return err
	}
	labels, err := parseLabels(c.StringSlice("label"))
	if err != nil {
		return err
	}
	res, err := newClient(c).Disclose(c.Context, client.DiscloseInput{
		After:      after,
		Labels:     labels,
		Set:        sched.SetID(c.Int64("set")),
		Name:       name,
		Tasks:      specs,
		Array:      array,
		Request:    c.Bool("request"),
		MaxRunning: int32(maxRunning),
		Retry:      policy,
		Stop:       rule,
		Route:      sched.Route{Pool: c.String("pool"), Partition: c.String("partition")},
	})
	if err != nil {
		return err
	}
	warnUnknownRoute(c, res)
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

// changeSet changes the cap (--max-running) or retry policy (--retries)
// of set --set without disclosing tasks: an append of none.
func changeSet(c *cli.Context, retries int32, retryOn string, rule sched.StopRule) error {
	maxRunning := c.Int("max-running")
	if maxRunning < 0 || maxRunning > 1<<30 {
		return usageErr("--max-running %d: want a number of copies, 1 or more", maxRunning)
	}
	policy, err := retryPolicy(retries, retryOn)
	if err != nil {
		return err
	}
	if c.Bool("request") {
		return usageErr("--request with no tasks: give the tasks to request, or use batchctl request")
	}
	res, err := newClient(c).Disclose(c.Context, client.DiscloseInput{Set: sched.SetID(c.Int64("set")), MaxRunning: int32(maxRunning), Retry: policy, Stop: rule})
	if err != nil {
		return err
	}
	if asJSON(c) {
		return writeJSON(c.App.Writer, struct {
			Set setView `json:"set"`
		}{viewSet(res.Set)})
	}
	if c.Bool("quiet") {
		_, err := fmt.Fprintln(c.App.Writer, res.Set.ID)
		return err
	}
	var parts []string
	if maxRunning > 0 {
		parts = append(parts, fmt.Sprintf("runs at most %d at once", res.Set.MaxRunning))
	}
	if retries > 0 {
		parts = append(parts, fmt.Sprintf("retries up to %d times on %s", res.Set.Retry.Retries, res.Set.Retry.RetryOn()))
	}
	if !rule.IsZero() {
		parts = append(parts, "stops "+res.Set.Stop.String())
	}
	_, err = fmt.Fprintf(c.App.Writer, "set %d: %s\n", res.Set.ID, strings.Join(parts, "; "))
	return err
}

// flagsAfterCommand refuses a command given without -- that has words
// looking like flags after its first: `disclose echo hi --request` would
// otherwise store --request as an argument, silently. The error shows the
// command line to type: disclose's own flags moved before --, any other
// word kept in the command.
func flagsAfterCommand(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) < 2 || afterDashDash(c) {
		return nil
	}
	own := map[string]cli.Flag{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			own[n] = f
		}
	}
	var flags, cmd []string
	first := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if i == 0 || len(a) < 2 || a[0] != '-' {
			cmd = append(cmd, a)
			continue
		}
		if first == "" {
			first = a
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := own[name]
		if !ok || !strings.HasPrefix(a, "--") { // -n may well be the task's (echo -n)
			cmd = append(cmd, a)
			continue
		}
		flags = append(flags, a)
		if v, ok := f.(cli.DocGenerationFlag); ok && v.TakesValue() && !hasValue && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if first == "" {
		return nil
	}
	line := append(append(append([]string{"batchctl disclose"}, flags...), "--"), cmd...)
	return usageErr("%q follows the command %q, where it would be an argument of the task: put disclose's flags first and the command after --, e.g. %s",
		first, args[0], strings.Join(line, " "))
}

// arrayArgv is the argv of each task of an array: the words after -- as
// given, or for a single word, that word as a shell line run by shell.
func arrayArgv(shell string, words []string) []string {
	if len(words) == 1 {
		return []string{shell, "-c", words[0]}
	}
	return append([]string(nil), words...)
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
	if n := c.Int("gpus"); n < 0 || n > sched.MaxGPUs {
		return d, usageErr("--gpus %d: want 0 to %d GPUs of one worker", n, sched.MaxGPUs)
	} else {
		d.GPUs = int32(n)
	}
	if d.Keep, err = keepPatterns(c.StringSlice("keep")); err != nil {
		return d, err
	}
	if dir := c.String("dir"); dir != "" {
		// The server takes absolute directories only: a relative one is
		// the user's, from here.
		abs, err := filepath.Abs(dir)
		if err != nil {
			return d, usageErr("--dir: %v", err)
		}
		d.Dir = abs
	}
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
	if s.GPUs == 0 {
		s.GPUs = d.GPUs
	}
	if len(s.Keep) == 0 {
		s.Keep = d.Keep
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

// maxFileTasks is the most tasks the server takes in one disclose; a
// longer --file is refused as soon as it is known to be longer.
const maxFileTasks = 200_000

// openInput opens a file, or stdin for "-".
func openInput(c *cli.Context, name string) (io.ReadCloser, error) {
	if name == "-" {
		r := c.App.Reader
		if r == nil {
			r = os.Stdin
		}
		return io.NopCloser(r), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return f, nil
}

// readInput reads a file, or stdin for "-".
func readInput(c *cli.Context, name string) ([]byte, error) {
	r, err := openInput(c, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
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

// keepPatterns checks --keep's patterns as the server would, so that a bad
// one fails here with the flag's name.
func keepPatterns(ps []string) ([]string, error) {
	for _, p := range ps {
		if err := sched.CheckKeepPattern(p); err != nil {
			return nil, usageErr("--keep: %s", sched.ErrorMessage(err))
		}
	}
	if err := sched.CheckKeep(ps); err != nil {
		return nil, usageErr("--keep: %s", sched.ErrorMessage(err))
	}
	return ps, nil
}

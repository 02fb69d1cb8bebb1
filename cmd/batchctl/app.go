package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"batchd/client"
	"batchd/cmd/internal/cliarg"
	"batchd/sched"
)

// version is set at build time with -ldflags "-X main.version=..." (the
// Makefile does); otherwise buildVersion reads the commit the binary was
// built from.
var version = ""

// buildVersion is version, or the VCS revision and time that go build
// stamped into the binary ("dev" when there are none, as under go run).
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if at != "" {
		return rev + dirty + " (" + at + ")"
	}
	return rev + dirty
}

// Exit statuses of batchctl. A single waited request exits with the task's
// own exit status instead.
const (
	exitOK           = 0
	exitInvalid      = 1 // bad usage, invalid input, or any other error
	exitNotFound     = 2 // unknown task set or task
	exitPrecondition = 3 // the task is not in a state that allows it
	exitUnavailable  = 4 // server unreachable or unavailable
	exitTasksFailed  = 5 // a waited request of many tasks had failures
	exitAuth         = 6 // no token, a wrong or revoked one, or not allowed
	exitInterrupted  = 130
)

// exitError carries an exit status chosen by a command (a task's status, or
// exitTasksFailed) with an optional message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitCode picks the exit status for an error returned by the app.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	var se *sched.Error
	if !errors.As(err, &se) {
		return exitInvalid // usage errors from flag parsing and our own checks
	}
	switch se.Code {
	case sched.ENOTFOUND:
		return exitNotFound
	case sched.EFAILEDPRECONDITION:
		return exitPrecondition
	case sched.EUNAVAILABLE:
		return exitUnavailable
	case sched.EUNAUTHENTICATED, sched.EPERMISSION:
		return exitAuth
	}
	return exitInvalid
}

// errorText is what batchctl prints for an error: the message a person can
// act on, without the code prefix.
func errorText(err error) string {
	var se *sched.Error
	if errors.As(err, &se) {
		return se.Message
	}
	return err.Error()
}

// run runs the app with args and returns the exit status; main exits with it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	if len(args) > 1 && args[1] == completeCommand {
		complete(app, args[2:], stdout)
		return exitOK
	}
	if i := commandIndex(app, args); i > 0 && args[i] == "help" {
		// "batchctl help [COMMAND...]" is "batchctl [COMMAND...] --help".
		args = append(append(slices.Clone(args[:i]), args[i+1:]...), "--help")
	}
	// disclose's arguments are the task's own command line: its flags
	// must come first (or the command after --).
	app.Metadata = map[string]any{argsKey: args}
	err := app.RunContext(ctx, cliarg.Reorder(app, args, "disclose"))
	code := exitCode(err)
	var ee *exitError
	if err != nil && (!errors.As(err, &ee) || ee.msg != "") {
		r, _ := tokenSearch(app)
		server, _ := app.Metadata[serverKey].(string)
		msg := cliarg.UnknownCommand(errorText(err), "batchctl")
		switch {
		case ctx.Err() != nil && code == exitInterrupted && !errors.As(err, &ee):
			msg = "interrupted"
		case code == exitUnavailable && !errors.As(err, &ee):
			msg += fmt.Sprintf(" (server %s): is `batchd serve` running there? Point at it with --server, BATCH_SERVER or \"server = URL\" in the config file", server)
		case code == exitAuth && r.Token != "" && !errors.As(err, &ee):
			msg += fmt.Sprintf(" (server %s, token from %s): check the token, or ask an admin for one (batchd user token NAME)", server, r.From)
		}
		fmt.Fprintln(stderr, "batchctl:", msg)
		if r.Token == "" && code == exitAuth {
			fmt.Fprintln(stderr, noTokenHelp(r))
		}
	}
	return code
}

const appHelp = `batchctl talks to a batchd server. You disclose the tasks you may need as a
task set, request the results you need now, and cancel the rest. Requested
tasks run before everything else; disclosed tasks run on idle slots, so their
results are often ready before you ask. You pay only for requested tasks.

Examples:

   # disclose three tasks (one per line of a file, run with sh -c)
   batchctl disclose --name frames --file commands.txt

   # disclose one task from its argv and request it at once
   batchctl disclose --request -- sh -c 'echo hello'

   # request task 0 of set 1, wait for it, print its output, exit with its status
   batchctl request 1/0

   # request several tasks (or a whole set) and get a table of results
   batchctl request 1/0,2,5-7
   batchctl request 1

   # cancel what you no longer need, look around, read the bill
   batchctl cancel 1
   batchctl status --state finished 1
   batchctl output 1/2
   batchctl bill --since 24h
   batchctl cluster

Task references: SET (every task of a set), SET/INDEX, SET/I,J,K-L.
Flags may come before or after the arguments (batchctl request 1/0 --no-wait),
except for disclose, whose arguments after the flags are the task's command
(give it after --: a flag after the command is refused otherwise).
Add --json to any command (before or after its name) for stable,
machine-readable output.

Exit status:
   0  ok
   1  bad usage or invalid input (or another error)
   2  unknown task set or task
   3  failed precondition (e.g. requesting a canceled task, reading the
      output of a task that is not requested, a task no worker up could hold)
   4  server unreachable or unavailable
   5  'request' of several tasks: one or more failed, timed out or were canceled
   6  no token, an unknown or revoked one, or not allowed (PermissionDenied)
   N  'request' of a single task: the task's own exit status (124 = timed out)
 130  interrupted (Ctrl-C); requested tasks stay requested

The server is --server, or $BATCH_SERVER, or the config file's "server = URL",
or http://localhost:8080.

Your token is --token, or $BATCH_TOKEN, or the config file's "token = bd_…"
(--config or $BATCH_CONFIG, which must exist; default
~/.config/batchd/token; the keys are token and server, anything else is an
error), or the admin token that batchd serve wrote into its data directory:
--data DIR when given, else $BATCHD_DATA when set, else ./batchd-data
(where batchd serve started in this directory keeps it). So batchctl on the server's
machine needs no flag. Without a token the server answers Unauthenticated
(exit status 6) and batchctl lists where it looked; another user's task
sets are "unknown" (exit status 2).`

// newApp builds the command tree, writing to stdout and stderr, so tests can
// run it in-process and capture what it prints.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:        "batchctl",
		Usage:       "disclose, request and cancel tasks on a batchd server",
		Description: appHelp,
		Version:     buildVersion(),
		Writer:      stdout,
		ErrWriter:   stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:    "server",
				Aliases: []string{"s"},
				Usage:   "batchd server URL",
				EnvVars: []string{"BATCH_SERVER"},
				Value:   "http://localhost:8080",
			},
			&cli.StringFlag{
				Name:    "token",
				Usage:   "your `TOKEN` (default: $BATCH_TOKEN, then the config file, then DATA/admin.token)",
				EnvVars: []string{"BATCH_TOKEN"},
			},
			&cli.StringFlag{
				Name:    "config",
				Usage:   "config `FILE` holding your token (\"token = bd_…\"; default: ~/.config/batchd/token)",
				EnvVars: []string{"BATCH_CONFIG"},
			},
			&cli.StringFlag{
				Name:  "data",
				Usage: "the local server's data `DIR`, whose admin.token is the last resort (default: $BATCHD_DATA, else ./batchd-data)",
			},
			&cli.BoolFlag{Name: "wide", Usage: "tables as wide as their content, whatever the terminal's width"},
			&cli.DurationFlag{
				Name:    "retry",
				Usage:   "keep retrying this long while the server is unreachable (retried disclose never duplicates)",
				EnvVars: []string{"BATCH_RETRY"},
				Value:   2 * time.Second,
			},
			jsonFlag(),
		},
		Commands: []*cli.Command{
			discloseCommand(),
			requestCommand(),
			cancelCommand(),
			retryCommand(),
			holdCommand(),
			releaseCommand(),
			updateCommand(),
			statusCommand(),
			lsCommand(),
			whyCommand(),
			outputCommand(),
			watchCommand(),
			billCommand(),
			clusterCommand(),
			usersCommand(),
			completionCommand(),
		},
		// Completion goes through completeCommand only: urfave/cli's
		// --generate-bash-completion ran the command when it followed
		// "--" (disclose -- <Tab> disclosed a task).
		EnableBashCompletion: false,
		HideHelpCommand:      true,
		Suggest:              true,
		// Errors go back to run, which prints them and picks the exit status.
		ExitErrHandler: func(*cli.Context, error) {},
		Before:         loadConfig,
	}
	for _, cmd := range app.Commands {
		if cmd.Name != "disclose" && cmd.Before == nil && len(cmd.Subcommands) == 0 {
			cmd.Before = noFlagArgs
		}
	}
	cliarg.CacheNames(app)
	app.OnUsageError = usageError("batchctl", app.Flags)
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			name := prefix + " " + cmd.Name
			cmd.OnUsageError = usageError(name, cmd.Flags)
			walk(name, cmd.Subcommands)
		}
	}
	walk("batchctl", app.Commands)
	return app
}

// commandIndex is the index in args (args[0] is the program) of the first
// word after the app's own flags; 0 when there is none.
func commandIndex(app *cli.App, args []string) int {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			if a == "--" {
				return 0
			}
			return i
		}
		if strings.Contains(a, "=") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		for _, f := range app.Flags {
			if v, ok := f.(cli.DocGenerationFlag); ok && v.TakesValue() && slices.Contains(f.Names(), name) {
				i++
				break
			}
		}
	}
	return 0
}

// usageError turns a flag that does not parse into one line that names it
// and where the flags are listed (urfave/cli would print the whole help,
// some ninety lines, after it).
func usageError(cmd string, flags []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			name = "-" + strings.TrimLeft(name, "-")
			if len(name) > 2 {
				name = "-" + name
			}
			msg = fmt.Sprintf("%s is not a flag of %s", name, cmd)
			if cli.SuggestFlag != nil {
				if s := cli.SuggestFlag(flags, strings.TrimLeft(name, "-"), true); s != "" && s != "--help" && s != "-h" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				}
			}
		}
		return usageErr("%s; see %s --help", msg, cmd)
	}
}

// noFlagArgs refuses an argument that looks like a flag: cliarg.Reorder
// moved every flag the command knows in front of the arguments, so such
// an argument is a flag it does not know.
func noFlagArgs(c *cli.Context) error {
	for _, a := range c.Args().Slice() {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' {
			return usageErr("%q is not a flag of %s (batchctl %s --help lists them)", a, c.Command.Name, c.Command.Name)
		}
	}
	return nil
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print stable, machine-readable JSON"}
}

// watchRetry is the least time request and watch wait for a server that
// went away.
const watchRetry = time.Minute

// tokenKey is where loadConfig keeps the token search in App.Metadata.
const tokenKey = "token"

// serverKey is where newClient keeps the server URL it talks to in
// App.Metadata, for run's error lines.
const serverKey = "server"

// argsKey is where run keeps the command line as typed in App.Metadata.
const argsKey = "args"

// afterDashDash reports whether c's arguments came after a "--" on the
// command line (urfave/cli drops the "--" itself).
func afterDashDash(c *cli.Context) bool {
	raw, _ := c.App.Metadata[argsKey].([]string)
	args := c.Args().Slice()
	n := len(args)
	return len(raw) > n && raw[len(raw)-n-1] == "--" && slices.Equal(raw[len(raw)-n:], args)
}

// loadConfig reads the config file and finds the token before any command
// runs: a config file that was named and is missing, or that has an
// unknown key, is an error whatever the command.
func loadConfig(c *cli.Context) error {
	r, err := client.FindToken(client.TokenSource{Flag: c.String("token"), ConfigFile: c.String("config"),
		ConfigRequired: c.IsSet("config"), DataDir: c.String("data")})
	if err != nil {
		return err
	}
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[tokenKey] = r
	return nil
}

// tokenSearch returns what loadConfig found.
func tokenSearch(app *cli.App) (client.TokenSearch, bool) {
	r, ok := app.Metadata[tokenKey].(client.TokenSearch)
	return r, ok
}

// noTokenHelp says where batchctl looked for a token and the three ways
// to give it one.
func noTokenHelp(r client.TokenSearch) string {
	cfg := r.Config.Path
	if cfg == "" {
		cfg = client.DefaultConfigFile()
	}
	var b strings.Builder
	b.WriteString("batchctl: no token was found; looked in:\n")
	for _, t := range r.Tried {
		b.WriteString("  " + t + "\n")
	}
	b.WriteString("Give batchctl a token in one of three ways:\n")
	b.WriteString("  1. --token TOKEN, or BATCH_TOKEN=TOKEN (an admin makes one: batchd user add NAME);\n")
	fmt.Fprintf(&b, "  2. a line \"token = TOKEN\" (and \"server = URL\") in %s, or in a file named with --config;\n", cfg)
	b.WriteString("  3. on the server's machine: run batchctl in the directory where batchd serve runs, or point --data or\n" +
		"     $BATCHD_DATA at its data directory (it holds admin.token).")
	return b.String()
}

// newClient returns a client for the --server of the command line (else
// the config file's server), sending the token loadConfig found. Ctrl-C
// cancels the command's context from here on (watchInterrupts).
func newClient(c *cli.Context) *client.Client {
	watchInterrupts(c.Context)
	retry := c.Duration("retry")
	r, _ := tokenSearch(c.App)
	server := c.String("server")
	if (!c.IsSet("server") || server == "") && r.Config.Server != "" {
		server = r.Config.Server
	}
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[serverKey] = server
	return client.New(client.Config{
		Server:     server,
		HTTPClient: client.WithToken(nil, r.Token),
		RetryFor:   retry,
		// request and watch are already waiting: they wait for a restarting
		// server too.
		WatchRetryFor: max(retry, watchRetry),
		ReconnectFunc: func(err error, wait time.Duration) {
			why := "the server ended the stream"
			if err != nil {
				why = sched.ErrorMessage(err)
			}
			fmt.Fprintf(c.App.ErrWriter, "batchctl: lost the watch (%s); reconnecting in %s\n", why, wait.Round(time.Millisecond))
		},
	})
}

// asJSON reports whether --json was given to the command or the app.
func asJSON(c *cli.Context) bool {
	for _, x := range c.Lineage() {
		if x.Bool("json") {
			return true
		}
	}
	return false
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns an ASCII table that renders to the command's writer,
// no wider than tableWidth says (long cells wrap).
func newTable(c *cli.Context, header ...any) *table {
	return newASCIITable(c.App.Writer, tableWidth(c), header...)
}

// tableWidth is the widest a table may be: no limit (0) with --wide;
// else $COLUMNS when it is set; else the terminal's width when the output
// is a terminal; else no limit (a pipe gets whole lines).
func tableWidth(c *cli.Context) int {
	if c.Bool("wide") {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := c.App.Writer.(*os.File); ok {
		return terminalWidth(f)
	}
	return 0
}

// usageErr returns an error that exits with status 1.
func usageErr(format string, args ...any) error {
	return sched.Errorf(sched.EINVALID, format, args...)
}

// taskSel names a set and some of its tasks, or (All) the whole set.
type taskSel struct {
	Set     sched.SetID
	Indexes []int32 // nil when All
	All     bool
}

// maxRangeTasks bounds an index range on the command line.
const maxRangeTasks = 1_000_000

// parseSel parses SET, SET/INDEX or SET/I,J,K-L.
func parseSel(s string) (taskSel, error) {
	if len(s) > 1 && s[0] == '-' {
		return taskSel{}, usageErr("%q is not a flag of this command (its --help lists them) nor a task reference (SET, SET/INDEX or SET/I,J,K-L)", s)
	}
	setPart, idxPart, hasIdx := strings.Cut(s, "/")
	id, err := strconv.ParseInt(setPart, 10, 64)
	if err != nil || id <= 0 {
		return taskSel{}, usageErr("%q is not a task reference: want SET, SET/INDEX or SET/I,J,K-L (e.g. 3/0,2,5-7)", s)
	}
	sel := taskSel{Set: sched.SetID(id), All: !hasIdx}
	if sel.All {
		return sel, nil
	}
	for _, part := range strings.Split(idxPart, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseInt(lo, 10, 32)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseInt(hi, 10, 32)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b-a >= maxRangeTasks {
			return taskSel{}, usageErr("%q is not a task reference: indexes are numbers from 0, ranges are LOW-HIGH (e.g. %d/0,2,5-7)", s, id)
		}
		for i := a; i <= b; i++ {
			sel.Indexes = append(sel.Indexes, int32(i))
		}
	}
	return sel, nil
}

// parseSels parses each argument and merges references to the same set,
// keeping the order in which sets first appear.
func parseSels(args []string) ([]taskSel, error) {
	var out []taskSel
	pos := map[sched.SetID]int{}
	for _, a := range args {
		sel, err := parseSel(a)
		if err != nil {
			return nil, err
		}
		i, ok := pos[sel.Set]
		switch {
		case !ok:
			pos[sel.Set] = len(out)
			out = append(out, sel)
		case out[i].All || sel.All:
			out[i].Indexes, out[i].All = nil, true
		default:
			out[i].Indexes = append(out[i].Indexes, sel.Indexes...)
		}
	}
	return out, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// secs formats seconds for a table.
func secs(s float64) string {
	switch {
	case s == 0:
		return "0s"
	case s < 10:
		return strconv.FormatFloat(s, 'f', 3, 64) + "s"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + "s"
}

// when formats a time for a table ("-" for none).
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

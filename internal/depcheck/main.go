// Command depcheck enforces which of batchd's packages may import which
// (`make lint` runs it). It reads the import graph from `go list -deps`,
// never from grep, so an import through a third package counts as much as a
// direct one. Each rule names the packages it governs and what their
// dependency closure must not contain; the rules are the table in
// CONTRIBUTING.md.
//
//	go run ./internal/depcheck [-overlay FILE]
//
// -overlay is passed to `go list` (tests plant a violating file that way,
// without touching the tree).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

const module = "batchd"

// A rule says that every package matching From (and not matching Except)
// must not depend, directly or through others, on a package that Forbidden
// accepts.
type rule struct {
	Name      string
	From      []string // package patterns: "batchd/x" or "batchd/x/..."
	Except    []string
	Forbidden func(dep string) bool
}

// match reports whether pkg matches pattern: exactly, or under it when the
// pattern ends in "/...".
func match(pattern, pkg string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, pkg) })
}

// ours reports whether dep is a package of this module.
func ours(dep string) bool { return dep == module || strings.HasPrefix(dep, module+"/") }

// std reports whether dep is in the standard library: its first path
// element has no dot and it is not ours.
func std(dep string) bool {
	first, _, _ := strings.Cut(dep, "/")
	return !ours(dep) && !strings.Contains(first, ".")
}

func anyOf(patterns ...string) func(string) bool {
	return func(dep string) bool { return matchAny(patterns, dep) }
}

// rules is the house's import direction (shared/STYLE.md, "Who owns what").
var rules = []rule{
	{
		Name:      "sched imports only the standard library",
		From:      []string{"batchd/sched"},
		Forbidden: func(dep string) bool { return !std(dep) && dep != "batchd/sched" },
	},
	{
		Name: "the simulator imports only the standard library and sched",
		From: []string{"batchd/sched/sim"},
		Forbidden: func(dep string) bool {
			return !std(dep) && !match("batchd/sched/...", dep)
		},
	},
	{
		Name:      "store imports neither server, worker, pool, client, the simulator nor cmd",
		From:      []string{"batchd/store/..."},
		Forbidden: anyOf("batchd/server/...", "batchd/worker/...", "batchd/pool/...", "batchd/client/...", "batchd/sched/sim/...", "batchd/cmd/..."),
	},
	{
		Name: "batchctl is CGO-free: it imports neither store, SQLite nor the simulator",
		From: []string{"batchd/cmd/batchctl/..."},
		Forbidden: anyOf("batchd/store/...", "batchd/server/...", "batchd/sched/sim/...",
			"github.com/mattn/go-sqlite3/..."),
	},
	{
		Name:      "worker and pool never import server, store or the simulator",
		From:      []string{"batchd/worker/...", "batchd/pool/..."},
		Forbidden: anyOf("batchd/server/...", "batchd/store/...", "batchd/sched/sim/...", "batchd/cmd/..."),
	},
	{
		Name:      "client is the typed client only: no server, store, worker or pool",
		From:      []string{"batchd/client/..."},
		Forbidden: anyOf("batchd/server/...", "batchd/store/...", "batchd/worker/...", "batchd/pool/...", "batchd/sched/sim/...", "batchd/cmd/..."),
	},
	{
		Name:      "server imports neither the worker agent, the pool, the client nor the simulator",
		From:      []string{"batchd/server/..."},
		Forbidden: anyOf("batchd/worker/...", "batchd/pool/...", "batchd/client/...", "batchd/sched/sim/...", "batchd/cmd/..."),
	},
	{
		Name: "only server, store, cmd/batchd and benchmark commands import store",
		From: []string{"batchd/..."},
		Except: []string{"batchd/store/...", "batchd/server/...", "batchd/cmd/batchd/...",
			"batchd/bench/..."}, // benchmark commands read a server's store after the run
		Forbidden: anyOf("batchd/store/..."),
	},
	{
		Name:      "nothing outside cmd imports cmd",
		From:      []string{"batchd/..."},
		Except:    []string{"batchd/cmd/..."},
		Forbidden: anyOf("batchd/cmd/..."),
	},
	{
		Name: "the wire contract and the shared helpers import only the standard library and proto",
		From: []string{"batchd/internal/wire/...", "batchd/internal/jitter/...", "batchd/internal/forkbase/...", "batchd/internal/promtext/..."},
		Forbidden: func(dep string) bool {
			return ours(dep) && !match("batchd/proto/...", dep) && !match("batchd/internal/...", dep)
		},
	},
}

// pkg is one package and its dependency closure.
type pkg struct {
	path string
	deps []string
}

// list runs `go list -deps` for every package of the module and returns
// each with its closure.
func list(overlay string) ([]pkg, error) {
	args := []string{"list", "-e"} // -e: list a graph that also breaks Go's own rules (internal/), so ours still report it
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkgs = append(pkgs, pkg{path: f[0], deps: f[1:]})
	}
	return pkgs, sc.Err()
}

// check returns one line per violation: the rule, the package and the
// forbidden dependency.
func check(pkgs []pkg) []string {
	var bad []string
	for _, r := range rules {
		for _, p := range pkgs {
			if !matchAny(r.From, p.path) || matchAny(r.Except, p.path) {
				continue
			}
			for _, d := range p.deps {
				if r.Forbidden(d) {
					bad = append(bad, fmt.Sprintf("%s: %s depends on %s", r.Name, p.path, d))
				}
			}
		}
	}
	return bad
}

func main() {
	overlay := flag.String("overlay", "", "a `go list -overlay` file")
	flag.Parse()
	pkgs, err := list(*overlay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "depcheck:", err)
		os.Exit(2)
	}
	bad := check(pkgs)
	for _, b := range bad {
		fmt.Println(b)
	}
	if len(bad) > 0 {
		fmt.Printf("depcheck: %d import-rule violations\n", len(bad))
		os.Exit(1)
	}
}

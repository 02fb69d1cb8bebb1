package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes batchctl's commands and flags in your shell.

   # bash: in ~/.bashrc
   source <(batchctl completion bash)
   # zsh: in ~/.zshrc (after compinit)
   source <(batchctl completion zsh)
   # fish
   batchctl completion fish > ~/.config/fish/completions/batchctl.fish`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("completion takes one shell: bash, zsh or fish")
			}
			w := c.App.Writer
			switch sh := c.Args().First(); sh {
			case "bash":
				_, err := fmt.Fprint(w, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(w, zshCompletion)
				return err
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(w, s)
				return err
			default:
				return usageErr("completion %q: want bash, zsh or fish", sh)
			}
		},
	}
}

// completeCommand is the argument that makes batchctl print completions
// instead of running anything: `batchctl __complete WORD... CUR` prints
// the words that may stand where CUR is, one a line. It reads only the
// command tree (no config, no server), and after a "--" it offers nothing,
// since what follows is a task's own command line.
const completeCommand = "__complete"

// complete prints the candidates for the last of words (the words after
// the program name, the last being the one under the cursor).
func complete(app *cli.App, words []string, w io.Writer) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	flags, cmds := app.Flags, app.Commands
	var leaf *cli.Command
	for i := 0; i < len(before); i++ {
		a := before[i]
		switch {
		case a == "--":
			return // a task's command line: nothing to offer
		case len(a) > 1 && a[0] == '-':
			if !strings.Contains(a, "=") && takesValue(flags, a) {
				if i == len(before)-1 {
					return // cur is the flag's value: the shell's own files
				}
				i++
			}
		case leaf == nil || len(leaf.Subcommands) > 0:
			if c := findCommand(cmds, a); c != nil {
				leaf, flags, cmds = c, c.Flags, c.Subcommands
			} else {
				cmds = nil
			}
		}
	}
	var out []string
	if strings.HasPrefix(cur, "-") {
		seen := map[string]bool{}
		for _, fs := range [][]cli.Flag{flags, app.Flags} {
			for _, f := range fs {
				if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
					continue
				}
				for _, n := range f.Names() {
					name := "--" + n
					if len(n) == 1 {
						name = "-" + n
					}
					if !seen[name] {
						seen[name] = true
						out = append(out, name)
					}
				}
			}
		}
		out = append(out, "--help")
	} else if leaf == nil || len(leaf.Subcommands) > 0 {
		for _, c := range cmds {
			if !c.Hidden {
				out = append(out, c.Name)
			}
		}
	} else if leaf.Name == "completion" {
		out = []string{"bash", "zsh", "fish"}
	}
	for _, o := range out {
		if strings.HasPrefix(o, cur) {
			fmt.Fprintln(w, o)
		}
	}
}

// takesValue reports whether flag a (a "-x" or "--name" word) is one of
// flags and takes a value in the next word.
func takesValue(flags []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				v, ok := f.(cli.DocGenerationFlag)
				return ok && v.TakesValue()
			}
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// The bash and zsh scripts ask batchctl for the words that may come next
// through its completion entry point (completeCommand), which runs no
// command: pressing Tab never discloses or requests anything.
const bashCompletion = `# batchctl completion for bash: source <(batchctl completion bash)
_batchctl_complete() {
  COMPREPLY=()
  local cur="${COMP_WORDS[COMP_CWORD]}" opts
  opts=$("${COMP_WORDS[0]}" ` + completeCommand + ` "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null) || return 0
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _batchctl_complete batchctl
`

const zshCompletion = `#compdef batchctl
# batchctl completion for zsh: source <(batchctl completion zsh)
_batchctl_complete() {
  local -a opts
  opts=("${(@f)$(${words[1]} ` + completeCommand + ` "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -n "${opts[1]}" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _batchctl_complete batchctl
`

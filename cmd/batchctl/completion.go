package main

import (
	"fmt"

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

// The bash and zsh scripts ask batchctl itself for the words that may
// come next (urfave/cli's --generate-bash-completion), after its
// autocomplete/ scripts.
const bashCompletion = `# batchctl completion for bash: source <(batchctl completion bash)
_batchctl_complete() {
  local cur words
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=("${COMP_WORDS[@]:0:$COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _batchctl_complete batchctl
`

const zshCompletion = `#compdef batchctl
# batchctl completion for zsh: source <(batchctl completion zsh)
_batchctl_complete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _batchctl_complete batchctl
`

package main

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// The rule that turns a --file (and the page's commands field, whose
// parseCommands in web/src/form.ts follows the same rule; both tests read
// web/test/commands.vectors.json) into shell lines, one task each:
//
//  1. The text splits at "\n"; a "\r" just before it is dropped.
//  2. A line that ends in an odd number of backslashes goes on into the
//     next: the backslash and the newline stay in the task's line, and the
//     shell reads them as a continuation, as it would in a script.
//     A backslash at the very end of the text is dropped.
//  3. Each line is trimmed of spaces, tabs and newlines at both ends; empty lines and
//     lines that start with # are skipped.

// errTooManyLines is what splitCommands returns when the text holds more
// than its limit of commands.
var errTooManyLines = errors.New("too many commands")

// maxLineBytes bounds one line of a --file.
const maxLineBytes = 16 << 20

// splitCommands reads r line by line and calls fn with each command the
// rule above gives, stopping with errTooManyLines at command limit+1 (so a
// huge file is refused after reading no more than it may hold).
func splitCommands(r io.Reader, limit int, fn func(line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLineBytes)
	n := 0
	emit := func(line string) error {
		line = strings.Trim(line, " \t\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			return nil
		}
		if n++; n > limit {
			return errTooManyLines
		}
		return fn(line)
	}
	var pending strings.Builder
	for sc.Scan() {
		raw := sc.Text() // the scanner drops "\n" and a "\r" before it
		if continues(raw) {
			pending.WriteString(raw)
			pending.WriteString("\n")
			if pending.Len() > maxLineBytes {
				return bufio.ErrTooLong
			}
			continue
		}
		line := raw
		if pending.Len() > 0 {
			line = pending.String() + raw
			pending.Reset()
		}
		if err := emit(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if pending.Len() > 0 {
		// The text ended in a continuation: drop its "\\\n".
		return emit(strings.TrimSuffix(pending.String(), "\\\n"))
	}
	return nil
}

// continues reports whether line ends in an odd number of backslashes
// (an even number is escaped backslashes, as the shell reads them).
func continues(line string) bool {
	n := len(line) - len(strings.TrimRight(line, `\`))
	return n%2 == 1
}

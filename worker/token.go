package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// TokenFromFD reads the worker token from file descriptor fd (the whole
// of it, to its end) and closes fd: `batchd worker --token-fd 3
// 3<token-file` hands the token over without putting it where other
// processes read (a command line, an environment).
func TokenFromFD(fd int) (string, error) {
	f := os.NewFile(uintptr(fd), "token-fd")
	if f == nil {
		return "", fmt.Errorf("token fd %d: not open", fd)
	}
	defer f.Close()
	return readToken(f, fmt.Sprintf("fd %d", fd))
}

// TokenFromFile reads the worker token from path, and removes the file
// when remove is set (a pilot's token file: read once, before any task
// runs). A file that others may read, or that is not a plain file, is
// refused: whoever could read it has the token.
func TokenFromFile(path string, remove bool) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s: not a plain file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s: mode %04o lets others read it; make it 0600", path, fi.Mode().Perm())
	}
	tok, err := readToken(f, path)
	if err != nil {
		return "", err
	}
	if remove {
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
	}
	return tok, nil
}

// readToken reads a token (at most 4 KiB, surrounding white space
// dropped).
func readToken(r io.Reader, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4097))
	if err != nil {
		return "", fmt.Errorf("token %s: %w", what, err)
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("token %s: longer than 4 KiB", what)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("token " + what + ": empty")
	}
	return tok, nil
}

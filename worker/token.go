package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
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
	return WaitTokenFile(context.Background(), path, remove, 0)
}

// tokenPoll is how often WaitTokenFile looks at an empty token file.
const tokenPoll = 10 * time.Millisecond

// WaitTokenFile is TokenFromFile for a token file that may still be
// empty: a pilot may start as soon as it is submitted, before its pool
// has minted its token (the token names the pilot's worker, which only
// the job id tells) and written it into the file. While the file is
// there and empty it looks again every few milliseconds, for up to wait.
// A file that goes away (the pool could not mint the token and gave the
// pilot up), or stays empty for wait, is an error.
func WaitTokenFile(ctx context.Context, path string, remove bool, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		tok, empty, err := tokenFromFile(path, remove)
		if !empty || !time.Now().Before(deadline) {
			return tok, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("token file %s: %w", path, ctx.Err())
		case <-time.After(tokenPoll):
		}
	}
}

// tokenFromFile reads the token in path once; empty says that the file
// was there but held nothing.
func tokenFromFile(path string, remove bool) (tok string, empty bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("token file %s: not a plain file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("token file %s: mode %04o lets others read it; make it 0600", path, fi.Mode().Perm())
	}
	if fi.Size() == 0 {
		return "", true, fmt.Errorf("token %s: empty", path)
	}
	tok, err = readToken(f, path)
	if err != nil {
		return "", false, err
	}
	if remove {
		if err := os.Remove(path); err != nil {
			return "", false, fmt.Errorf("token file: %w", err)
		}
	}
	return tok, false, nil
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

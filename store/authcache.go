package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Checking a token is a read of the database, and every call checks one:
// under API load it was a tenth of the server's CPU. Authenticate keeps
// the tokens it found valid for up to authCacheTTL, unless a revocation
// happened since. A revocation, in this process or another (`batchd user
// revoke` beside a running server), appends a byte to the file
// DB.Path+"-auth" after its commit; Authenticate stats that file on every
// call (one system call) and forgets every token when its size or time
// changed. Unknown and revoked tokens are never kept, so a new token works
// at once and a revoked one fails on its next call.
const authCacheTTL = 5 * time.Second

// authCacheMax bounds the tokens kept; a full cache starts over.
const authCacheMax = 4096

type authCache struct {
	mu     sync.Mutex
	mark   authMark
	tokens map[string]authEntry // by token hash
}

type authEntry struct {
	user User
	at   time.Time
}

// authMark is what the revocation file's stat says: size and time.
type authMark struct {
	size  int64
	mtime time.Time
	ok    bool // the file exists
}

func (db *DB) authPath() string { return db.Path + "-auth" }

func (db *DB) readAuthMark() authMark {
	fi, err := os.Stat(db.authPath())
	if err != nil {
		return authMark{}
	}
	return authMark{size: fi.Size(), mtime: fi.ModTime(), ok: true}
}

// noteRevocation tells every process with this database open that tokens
// were revoked: it appends a byte to the revocation file.
func (db *DB) noteRevocation() error {
	f, err := os.OpenFile(db.authPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte{'r'})
	return errors.Join(werr, f.Close())
}

// cachedUser returns the user a token was found valid for, if that answer
// still stands: no revocation since (mark) and younger than the TTL.
func (db *DB) cachedUser(hash string, mark authMark, now time.Time) (User, bool) {
	c := &db.auth
	c.mu.Lock()
	defer c.mu.Unlock()
	if mark != c.mark {
		c.mark = mark
		clear(c.tokens)
		return User{}, false
	}
	e, ok := c.tokens[hash]
	if !ok || now.Sub(e.at) >= authCacheTTL || now.Before(e.at) {
		return User{}, false
	}
	return e.user, true
}

// keepUser remembers that a token was valid as of mark (read before the
// database was).
func (db *DB) keepUser(hash string, u User, mark authMark, now time.Time) {
	c := &db.auth
	c.mu.Lock()
	defer c.mu.Unlock()
	if mark != c.mark {
		return // a revocation came in between: do not keep an answer from before it
	}
	if c.tokens == nil || len(c.tokens) >= authCacheMax {
		c.tokens = make(map[string]authEntry)
	}
	c.tokens[hash] = authEntry{user: u, at: now}
}

// Authenticate returns the live user a token belongs to; a revocation takes
// effect on the next call (see authCacheTTL). Errors: EUNAUTHENTICATED
// (unknown or revoked token, or revoked user).
func (db *DB) Authenticate(ctx context.Context, token string) (User, error) {
	hash := HashToken(token)
	mark, now := db.readAuthMark(), time.Now()
	if u, ok := db.cachedUser(hash, mark, now); ok && (u.ExpiresAt.IsZero() || db.Now().Before(u.ExpiresAt)) {
		return u, nil
	}
	u, err := db.authenticate(ctx, hash)
	if err == nil {
		db.keepUser(hash, u, mark, now)
	}
	return u, err
}

// revoked finishes a revocation: the revocation file, so that a cached
// token stops working at once.
func (db *DB) revoked(err error) error {
	if err != nil {
		return err
	}
	if err := db.noteRevocation(); err != nil {
		return fmt.Errorf("revoked, but a running server may accept the tokens for %s more: %w", authCacheTTL, err)
	}
	return nil
}

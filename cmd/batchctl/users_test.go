package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Users, tokens and isolation through batchctl: an admin (found through
// the data directory) adds a user; the user's token (--token) sees only its
// own sets and bill; --csv and per-user totals; no token and a revoked
// token exit 6.
func TestUsersAndBill(t *testing.T) {
	e := newEnv(t, 1)
	if got := e.ok("users", "whoami"); got != "admin (admin)\n" {
		t.Fatalf("whoami = %q", got)
	}
	token := strings.TrimSpace(e.ok("users", "add", "alice"))
	if !strings.HasPrefix(token, "bd_") {
		t.Fatalf("users add printed %q", token)
	}
	adminSet := strings.TrimSpace(e.ok("disclose", "-q", "--", "echo", "admin"))
	alice := &env{t: t, url: e.url, data: t.TempDir(), token: token, srv: e.srv}
	set := strings.TrimSpace(alice.ok("disclose", "-q", "--request", "--", "echo", "hi"))
	alice.ok("request", set+"/0")
	if _, _, code := alice.run("status", adminSet); code != exitNotFound {
		t.Fatalf("alice's status of the admin's set: exit %d, want %d", code, exitNotFound)
	}
	if _, _, code := alice.run("bill", "--all"); code != exitAuth {
		t.Fatalf("alice's bill --all: exit %d, want %d", code, exitAuth)
	}
	recs, err := csv.NewReader(strings.NewReader(alice.ok("bill", "--csv"))).ReadAll()
	if err != nil || len(recs) != 2 || recs[0][0] != "line" || recs[1][1] != "alice" || recs[1][2] != set || recs[1][12] != "finished" {
		t.Fatalf("bill --csv = %v, %v", recs, err)
	}
	var all struct {
		ByOwner []struct {
			Owner string `json:"owner"`
			Lines int64  `json:"lines"`
		} `json:"by_owner"`
	}
	e.json(&all, "bill", "--all")
	if len(all.ByOwner) != 1 || all.ByOwner[0].Owner != "alice" || all.ByOwner[0].Lines != 1 {
		t.Fatalf("bill --all by_owner = %+v", all.ByOwner)
	}
	if got := e.ok("bill", "--all"); !strings.Contains(got, "alice") || !strings.Contains(got, "amount due") {
		t.Fatalf("bill --all printed %q", got)
	}
	if list := e.ok("users", "list"); !strings.Contains(list, "alice") || !strings.Contains(list, "admin") {
		t.Fatalf("users list = %q", list)
	}
	// No token at all: the data directory has none and nothing else names one.
	nobody := &env{t: t, url: e.url, data: t.TempDir(), srv: e.srv}
	if _, errOut, code := nobody.run("status"); code != exitAuth || !strings.Contains(errOut, "token") {
		t.Fatalf("no token: exit %d, %q", code, errOut)
	}
	e.ok("users", "revoke", "alice")
	if _, _, code := alice.run("status"); code != exitAuth {
		t.Fatalf("revoked alice: exit %d, want %d", code, exitAuth)
	}
}

// batchctl users goes through the typed client like every other command:
// with an unreadable config file it fails once (not once per client it
// builds) before calling; a listing shows the users' domain fields.
func TestUsersThroughClient(t *testing.T) {
	e := newEnv(t, 0)
	nobody := &env{t: t, url: e.url, data: t.TempDir(), srv: e.srv}
	// The config file batchctl reads is a directory: a config that
	// cannot be read.
	nobody.config = filepath.Join(nobody.data, "no-config")
	if err := os.Mkdir(nobody.config, 0o700); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := nobody.run("users", "whoami")
	if code != exitInvalid {
		t.Fatalf("users whoami with an unreadable config: exit %d, want %d", code, exitInvalid)
	}
	if n := strings.Count(errOut, "config file"); n != 1 {
		t.Errorf("users whoami with an unreadable config said so %d times, want once:\n%s", n, errOut)
	}
	e.ok("users", "add", "--role", "worker", "box")
	var list []struct {
		Name   string `json:"name"`
		Role   string `json:"role"`
		Tokens int32  `json:"tokens"`
	}
	e.json(&list, "users", "list")
	if len(list) != 2 || list[1].Name != "box" || list[1].Role != "worker" || list[1].Tokens != 1 {
		t.Fatalf("users list = %+v, want admin and the worker box with one token", list)
	}
}

package client_test

import (
	"os"
	"path/filepath"
	"testing"

	"batchd/client"
)

// The token comes from the flag, then $BATCH_TOKEN, then the config file,
// then DATA/admin.token.
func TestResolveTokenPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "token.conf")
	write(filepath.Join(data, client.AdminTokenFile), "bd_file\n")
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	src := client.TokenSource{Env: lookup, ConfigFile: cfg, DataDir: data}
	check := func(want, wantFrom string) {
		t.Helper()
		got, from, err := client.ResolveToken(src)
		if err != nil || got != want || from != wantFrom {
			t.Fatalf("ResolveToken = %q from %q (%v), want %q from %q", got, from, err, want, wantFrom)
		}
	}
	check("bd_file", filepath.Join(data, client.AdminTokenFile))
	write(cfg, "# my token\ntoken = \"bd_config\"\n")
	check("bd_config", cfg)
	env[client.TokenEnv] = "bd_env"
	check("bd_env", "$"+client.TokenEnv)
	src.Flag = "bd_flag"
	check("bd_flag", "--token")
	// $BATCHD_DATA names the data directory when the source does not.
	none := client.TokenSource{Env: func(k string) (string, bool) {
		if k == client.DataEnv {
			return data, true
		}
		return "", false
	}, ConfigFile: filepath.Join(dir, "missing")}
	if got, _, err := client.ResolveToken(none); err != nil || got != "bd_file" {
		t.Fatalf("via $BATCHD_DATA: %q %v", got, err)
	}
	empty := client.TokenSource{Env: func(string) (string, bool) { return "", false }, ConfigFile: filepath.Join(dir, "missing"), DataDir: dir}
	if got, from, err := client.ResolveToken(empty); err != nil || got != "" || from != "" {
		t.Fatalf("no token anywhere: %q %q %v", got, from, err)
	}
}

// TestDataEnvWinsOverStaleLocalDir: a stale ./batchd-data where batchctl
// runs does not win over a $BATCHD_DATA that names another directory.
func TestDataEnvWinsOverStaleLocalDir(t *testing.T) {
	cwd, fresh := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	if err := os.MkdirAll(filepath.Join(cwd, "batchd-data"), 0o700); err != nil {
		t.Fatal(err)
	}
	for dir, tok := range map[string]string{filepath.Join(cwd, "batchd-data"): "bd_stale", fresh: "bd_fresh"} {
		if err := os.WriteFile(filepath.Join(dir, client.AdminTokenFile), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) (string, bool) {
		if k == client.DataEnv {
			return fresh, true
		}
		return "", false
	}
	src := client.TokenSource{Env: env, ConfigFile: filepath.Join(cwd, "missing")}
	if got, from, err := client.ResolveToken(src); err != nil || got != "bd_fresh" {
		t.Fatalf("ResolveToken = %q from %q (%v), want bd_fresh from $BATCHD_DATA", got, from, err)
	}
	src.Env = func(string) (string, bool) { return "", false }
	if got, _, err := client.ResolveToken(src); err != nil || got != "bd_stale" {
		t.Fatalf("without $BATCHD_DATA: %q (%v), want ./batchd-data's bd_stale", got, err)
	}
}

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

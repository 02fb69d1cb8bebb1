package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runRaw runs batchctl with exactly args (no --server, --data or --config
// added).
func runRaw(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), append([]string{"batchctl", "--retry", "0s"}, args...), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestConfigFile: the config file's server and token are used; a named
// file that is missing, and an unknown key, are errors that name the file.
func TestConfigFile(t *testing.T) {
	e := newEnv(t, 0)
	t.Setenv("BATCH_TOKEN", "")
	t.Setenv("BATCH_SERVER", "")
	t.Setenv("BATCHD_DATA", "")
	token := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(e.data, "admin.token")))))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "batchd.conf")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# mine\nserver = " + e.url + "\ntoken = " + token + "\n")
	if out, errOut, code := runRaw(t, "--config", cfg, "--data", dir, "status"); code != 0 {
		t.Fatalf("status with server and token from the config: exit %d\n%s%s", code, out, errOut)
	}
	write("sever = " + e.url + "\n")
	_, errOut, code := runRaw(t, "--config", cfg, "status")
	if code != exitInvalid || !strings.Contains(errOut, cfg+" line 1") || !strings.Contains(errOut, `unknown key "sever"`) || !strings.Contains(errOut, `did you mean "server"`) {
		t.Errorf("a misspelt key: exit %d, stderr %q", code, errOut)
	}
	missing := filepath.Join(dir, "nonexistent")
	_, errOut, code = runRaw(t, "--config", missing, "status")
	if code != exitInvalid || !strings.Contains(errOut, missing) {
		t.Errorf("--config naming a missing file: exit %d, stderr %q", code, errOut)
	}
}

// TestTokenDiscovery: with no flag, the admin token is found where batchd
// serve started in the current directory keeps it (./batchd-data), then
// under $BATCHD_DATA; without any, the error lists where batchctl looked
// and the three ways to fix it.
func TestTokenDiscovery(t *testing.T) {
	e := newEnv(t, 0)
	t.Setenv("BATCH_TOKEN", "")
	t.Setenv("BATCHD_DATA", "")
	token := must(os.ReadFile(filepath.Join(e.data, "admin.token")))
	here := t.TempDir()
	t.Chdir(here)
	_, errOut, code := runRaw(t, "--server", e.url, "--config", os.DevNull, "status")
	if code != exitAuth {
		t.Fatalf("no token anywhere: exit %d, want %d (%s)", code, exitAuth, errOut)
	}
	for _, want := range []string{filepath.Join("batchd-data", "admin.token") + ": no such file", "$BATCHD_DATA: not set", "$BATCH_TOKEN: not set",
		"three ways", "--token TOKEN", `"token = TOKEN"`, "--data"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no token: stderr lacks %q:\n%s", want, errOut)
		}
	}
	other := t.TempDir()
	t.Setenv("BATCHD_DATA", other)
	if err := os.WriteFile(filepath.Join(other, "admin.token"), token, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runRaw(t, "--server", e.url, "--config", os.DevNull, "status"); code != 0 {
		t.Fatalf("token under $BATCHD_DATA: exit %d (%s)", code, errOut)
	}
	t.Setenv("BATCHD_DATA", "")
	if err := os.Mkdir(filepath.Join(here, "batchd-data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(here, "batchd-data", "admin.token"), token, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runRaw(t, "--server", e.url, "--config", os.DevNull, "status"); code != 0 {
		t.Fatalf("token in ./batchd-data: exit %d (%s)", code, errOut)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSlurmStartPorts checks e2e/slurm/start.sh's ports: those it picks
// lie below the kernel's ephemeral range (where no outgoing connection
// takes them from under a daemon), and a port that is taken anyway makes
// it fail at once with a message that names the daemon and its port.
func TestSlurmStartPorts(t *testing.T) {
	scripts := slurmScripts(t)
	start := func(t *testing.T, env ...string) (string, string, error) {
		dir := filepath.Join(t.TempDir(), "slurm")
		cmd := exec.Command(filepath.Join(scripts, "start.sh"), dir, "1")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		t.Cleanup(func() { _ = exec.Command(filepath.Join(scripts, "stop.sh"), dir).Run() })
		return dir, string(out), err
	}

	t.Run("below the ephemeral range", func(t *testing.T) {
		b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		if err != nil {
			t.Skip(err)
		}
		low, err := strconv.Atoi(strings.Fields(string(b))[0])
		if err != nil {
			t.Fatal(err)
		}
		dir, out, err := start(t)
		if err != nil {
			t.Fatalf("start.sh: %v\n%s", err, out)
		}
		conf, err := os.ReadFile(filepath.Join(dir, "slurm.conf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"SlurmctldPort=", "SlurmdPort="} {
			_, rest, _ := strings.Cut(string(conf), "\n"+key)
			line, _, _ := strings.Cut(rest, "\n")
			port, err := strconv.Atoi(line)
			if err != nil || port >= low || port < 1024 {
				t.Errorf("%s%s, want a port in 1024-%d (below the ephemeral range)", key, line, low-1)
			}
		}
	})

	t.Run("a taken port is named", func(t *testing.T) {
		ln, err := net.Listen("tcp", ":0") // every address: slurmd binds them all
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		_, out, err := start(t, fmt.Sprintf("SLURMD_PORT=%d", port))
		if err == nil {
			t.Fatalf("start.sh with slurmd's port taken succeeded:\n%s", out)
		}
		if want := fmt.Sprintf("slurmd could not bind port %d", port); !strings.Contains(out, want) {
			t.Errorf("start.sh said:\n%s\nwant it to say %q", out, want)
		}
	})
}

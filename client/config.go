package client

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"batchd/sched"
)

// FileConfig is what a config file says.
type FileConfig struct {
	// Path is the file read ("" when there was none).
	Path string
	// Token is the user's token ("token = bd_…", or the token alone on a
	// line, the file's older form).
	Token string
	// Server is the server URL ("server = http://host:8080").
	Server string
}

// configKeys are the keys a config file may set.
var configKeys = []string{"token", "server"}

// LoadConfig reads a config file: lines "key = value" (or "key: value")
// with the keys token and server, comments from #, blank lines, and for
// the older form a line holding the token alone. A missing file is no
// config, unless required (the user named it). Errors (EINVALID): a
// required file that is missing, an unknown key, a line that is neither,
// naming the file and line.
func LoadConfig(path string, required bool) (FileConfig, error) {
	var c FileConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if required {
			return c, sched.Errorf(sched.EINVALID, "config file %s does not exist (named by --config or $BATCH_CONFIG)", path)
		}
		return c, nil
	}
	if err != nil {
		return c, sched.Errorf(sched.EINVALID, "read config file: %v", err)
	}
	c.Path = path
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := cutKey(line)
		switch {
		case ok && k == "token":
			c.Token = v
		case ok && k == "server":
			c.Server = v
		case ok:
			return c, sched.Errorf(sched.EINVALID, "config file %s line %d: unknown key %q (the keys are %s)%s",
				path, n+1, k, strings.Join(configKeys, ", "), suggestKey(k))
		case !strings.ContainsAny(line, " =:"):
			c.Token = line
		default:
			return c, sched.Errorf(sched.EINVALID, "config file %s line %d: want \"key = value\" (the keys are %s)", path, n+1, strings.Join(configKeys, ", "))
		}
	}
	return c, nil
}

// cutKey splits "key = value" or "key: value" (a URL's colon is not a
// separator: "server: http://x" splits at the first colon only when the
// key is a plain word).
func cutKey(line string) (key, value string, ok bool) {
	i := strings.IndexAny(line, "=:")
	if i <= 0 {
		return "", "", false
	}
	key = strings.TrimSpace(line[:i])
	if key == "" || strings.ContainsAny(key, " \t/") {
		return "", "", false
	}
	return strings.ToLower(key), strings.Trim(strings.TrimSpace(line[i+1:]), `"'`), true
}

// suggestKey says which key a misspelt one may have meant.
func suggestKey(k string) string {
	for _, known := range configKeys {
		if editDistance(k, known) <= 2 {
			return fmt.Sprintf("; did you mean %q?", known)
		}
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

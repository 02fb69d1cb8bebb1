package main

import (
	"strings"
	"testing"
)

// TestFlagsAfterArgumentsAndSuggestions: flags may follow the task
// references; a misspelt command or flag gets a suggestion; an unknown
// flag after the references is named as such.
func TestFlagsAfterArgumentsAndSuggestions(t *testing.T) {
	e := newEnv(t, 0)
	set := strings.TrimSpace(e.ok("disclose", "-q", "--", "true"))
	if out := e.ok("request", set+"/0", "--no-wait"); !strings.Contains(out, "requested") {
		t.Errorf("request %s/0 --no-wait printed %q", set, out)
	}
	var st struct {
		Tasks []struct {
			State string `json:"state"`
		} `json:"tasks"`
	}
	e.json(&st, "status", set, "--state", "requested")
	if len(st.Tasks) != 1 || st.Tasks[0].State != "requested" {
		t.Errorf("status %s --state requested: %+v", set, st.Tasks)
	}
	_, errOut, code := e.run("reqest", set+"/0")
	if code != exitInvalid || !strings.Contains(errOut, "unknown command 'reqest'") || !strings.Contains(errOut, `"request"`) {
		t.Errorf("reqest: exit %d, stderr %q; want exit 1 suggesting request", code, errOut)
	}
	_, errOut, code = e.run("status", set, "--nope")
	if code != exitInvalid || !strings.Contains(errOut, `"--nope" is not a flag of status`) {
		t.Errorf("status %s --nope: exit %d, stderr %q", set, code, errOut)
	}
}

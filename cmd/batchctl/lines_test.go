package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// commandVectors are the cases of the one rule that splits a --file and
// the page's commands field; web/test/form.test.ts reads the same file.
func commandVectors(t *testing.T) []struct {
	Name string   `json:"name"`
	Text string   `json:"text"`
	Want []string `json:"want"`
} {
	t.Helper()
	data, err := os.ReadFile("../../web/test/commands.vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			Name string   `json:"name"`
			Text string   `json:"text"`
			Want []string `json:"want"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no cases")
	}
	return v.Cases
}

// TestFileSplitsLikeThePage: disclose --file of each vector's text makes
// one task per line the shared rule gives, run as sh -c LINE.
func TestFileSplitsLikeThePage(t *testing.T) {
	e := newEnv(t, 0)
	for _, c := range commandVectors(t) {
		path := writeTemp(t, c.Text)
		out, errOut, code := e.run("disclose", "-q", "--file", path)
		if len(c.Want) == 0 {
			if code != exitInvalid {
				t.Errorf("%s: exit %d (%s), want %d: nothing to disclose", c.Name, code, errOut, exitInvalid)
			}
			continue
		}
		if code != 0 {
			t.Errorf("%s: exit %d: %s", c.Name, code, errOut)
			continue
		}
		var st struct {
			Tasks []taskView `json:"tasks"`
		}
		e.json(&st, "status", strings.TrimSpace(out))
		var got []string
		for _, tv := range st.Tasks {
			if len(tv.Spec.Argv) != 3 || tv.Spec.Argv[0] != "sh" || tv.Spec.Argv[1] != "-c" {
				t.Errorf("%s: argv %q, want sh -c LINE", c.Name, tv.Spec.Argv)
				continue
			}
			got = append(got, tv.Spec.Argv[2])
		}
		if !slices.Equal(got, c.Want) {
			t.Errorf("%s: %q gives %q, want %q", c.Name, c.Text, got, c.Want)
		}
	}
}

// TestFileStopsAtTheLimit: splitCommands stops at the first command over
// its limit, without reading the rest of its input.
func TestFileStopsAtTheLimit(t *testing.T) {
	r := &countingReader{r: strings.NewReader(strings.Repeat("echo x\n", 1_000_000))}
	n := 0
	err := splitCommands(r, 10, func(string) error { n++; return nil })
	if err != errTooManyLines || n != 10 {
		t.Fatalf("splitCommands: %d lines, %v; want 10, errTooManyLines", n, err)
	}
	if r.n > 1<<20 {
		t.Errorf("read %d bytes of a 7 MB input to find 11 lines", r.n)
	}
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

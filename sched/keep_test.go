package sched

import "testing"

func TestCheckKeepPattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"result.txt", true},
		{"out/*.csv", true},
		{"out/[ab]?.txt", true},
		{".hidden", true},
		{"", false},
		{"/etc/passwd", false},
		{"../x", false},
		{"out/../../x", false},
		{"./x", false},
		{"out//x", false},
		{"out/", false},
		{"**/*.csv", false},
		{"a\x00b", false},
		{"[", false},
		{string(make([]byte, MaxKeepPatternBytes+1)), false},
	} {
		err := CheckKeepPattern(tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("CheckKeepPattern(%.20q) = %v, want ok %v", tc.p, err, tc.ok)
		}
		if err != nil && ErrorCode(err) != EINVALID {
			t.Errorf("CheckKeepPattern(%.20q): code %s, want %s", tc.p, ErrorCode(err), EINVALID)
		}
	}
	if err := CheckKeep(make([]string, MaxKeepPatterns+1)); ErrorCode(err) != EINVALID {
		t.Errorf("too many patterns: %v", err)
	}
}

func TestValidKeptPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"a": true, "out/a.csv": true, "a b/c": true,
		"": false, "/a": false, "../a": false, "a/../b": false, "a//b": false, "./a": false, "a/": false, "a\x00": false,
	} {
		if got := ValidKeptPath(p); got != want {
			t.Errorf("ValidKeptPath(%q) = %v, want %v", p, got, want)
		}
	}
}

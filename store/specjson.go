package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"batchd/sched"
)

// decodeSpec decodes a task's spec as stored (json.Marshal of a
// sched.TaskSpec). Every watch step, page of tasks and copy start decodes
// specs, and encoding/json's reflection was a quarter of reading a task;
// the specs the store writes have one shape, which fastSpec reads by hand.
// Anything else (escapes in a string, another field order, fields added
// since) goes to encoding/json, so the result is always json.Unmarshal's.
func decodeSpec(s string, out *sched.TaskSpec) error {
	if fastSpec(s, out) {
		return nil
	}
	*out = sched.TaskSpec{}
	return json.Unmarshal([]byte(s), out)
}

// specParser reads the JSON that json.Marshal writes for a TaskSpec.
type specParser struct {
	s  string
	ok bool
}

func (p *specParser) lit(l string) {
	if p.ok && strings.HasPrefix(p.s, l) {
		p.s = p.s[len(l):]
		return
	}
	p.ok = false
}

func (p *specParser) peek(l string) bool { return p.ok && strings.HasPrefix(p.s, l) }

// str reads a string without escapes or control characters.
func (p *specParser) str() string {
	if !p.ok || len(p.s) == 0 || p.s[0] != '"' {
		p.ok = false
		return ""
	}
	for i := 1; i < len(p.s); i++ {
		c := p.s[i]
		if c == '\\' || c < 0x20 {
			break // an escape or a control character: encoding/json's job
		}
		if c == '"' {
			v := p.s[1:i]
			if !utf8.ValidString(v) {
				break // json.Unmarshal replaces bad bytes
			}
			p.s = p.s[i+1:]
			return v
		}
	}
	p.ok = false
	return ""
}

// num reads a number as json.Marshal writes a float64.
func (p *specParser) num() float64 {
	if !p.ok {
		return 0
	}
	i := 0
	digits := func() int {
		j := i
		for i < len(p.s) && p.s[i] >= '0' && p.s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(p.s) && p.s[i] == '-' {
		i++
	}
	if i < len(p.s) && p.s[i] == '0' {
		i++
	} else if digits() == 0 {
		p.ok = false
		return 0
	}
	if i < len(p.s) && p.s[i] == '.' {
		i++
		if digits() == 0 {
			p.ok = false
			return 0
		}
	}
	if i < len(p.s) && (p.s[i] == 'e' || p.s[i] == 'E') {
		i++
		if i < len(p.s) && (p.s[i] == '+' || p.s[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.ok = false
			return 0
		}
	}
	v, err := strconv.ParseFloat(p.s[:i], 64)
	if err != nil {
		p.ok = false
		return 0
	}
	p.s = p.s[i:]
	return v
}

func (p *specParser) boolean() bool {
	switch {
	case p.peek("true"):
		p.lit("true")
		return true
	case p.peek("false"):
		p.lit("false")
	default:
		p.ok = false
	}
	return false
}

// fastSpec decodes s if it has exactly the shape json.Marshal gives a
// TaskSpec, and says whether it did.
func fastSpec(s string, out *sched.TaskSpec) bool {
	p := &specParser{s: s, ok: true}
	var t sched.TaskSpec
	p.lit(`{"Argv":`)
	if p.peek("null") {
		p.lit("null")
	} else {
		p.lit("[")
		t.Argv = []string{}
		for p.ok && !p.peek("]") {
			if len(t.Argv) > 0 {
				p.lit(",")
			}
			t.Argv = append(t.Argv, p.str())
		}
		p.lit("]")
	}
	p.lit(`,"Env":`)
	if p.peek("null") {
		p.lit("null")
	} else {
		p.lit("{")
		t.Env = map[string]string{}
		for p.ok && !p.peek("}") {
			if len(t.Env) > 0 {
				p.lit(",")
			}
			k := p.str()
			p.lit(":")
			if _, dup := t.Env[k]; dup {
				p.ok = false // json.Unmarshal keeps the last; not a shape Marshal writes
			}
			t.Env[k] = p.str()
		}
		p.lit("}")
	}
	p.lit(`,"Dir":`)
	t.Dir = p.str()
	p.lit(`,"EstimateSeconds":`)
	t.EstimateSeconds = p.num()
	p.lit(`,"NoSpeculation":`)
	t.NoSpeculation = p.boolean()
	p.lit(`,"TimeoutSeconds":`)
	t.TimeoutSeconds = p.num()
	p.lit(`,"DeadlineSeconds":`)
	t.DeadlineSeconds = p.num()
	p.lit("}")
	if !p.ok || p.s != "" {
		return false
	}
	*out = t
	return true
}

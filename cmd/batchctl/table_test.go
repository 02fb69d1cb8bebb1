package main

import (
	"strings"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// TestTableMatchesTablewriter: without a width limit, the CLI's own table
// prints what the table library it replaced printed (the library is linked
// into this test only), so scripts that read batchctl's tables see no
// change.
func TestTableMatchesTablewriter(t *testing.T) {
	header := []any{"", "slot-seconds", "b", "PATH"}
	rows := [][]any{
		{"x", 3, true, int64(-7)},
		{"a rather long command line that makes the table wide", int64(-2), 1.5, nil},
		{"", nil, time.Second, "  padded  "},
		{"multi\nline", "é日本", "three\nline\ncell", ""},
		{[]string{"a", "b", "c", "d"}},
	}
	var want, got strings.Builder
	lib := tablewriter.NewTable(&want, tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})))
	lib.Header(header...)
	own := newASCIITable(&got, 0, header...)
	for _, r := range rows {
		if err := lib.Append(r...); err != nil {
			t.Fatal(err)
		}
		if err := own.Append(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := lib.Render(); err != nil {
		t.Fatal(err)
	}
	if err := own.Render(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("own table:\n%s\nthe library's:\n%s", got.String(), want.String())
	}

	// A header alone: the library closes it with a rule and draws no body.
	want.Reset()
	got.Reset()
	lib = tablewriter.NewTable(&want, tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})))
	lib.Header("PATH", "SIZE")
	if err := lib.Render(); err != nil {
		t.Fatal(err)
	}
	if err := newASCIITable(&got, 0, "PATH", "SIZE").Render(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("header only, own:\n%s\nthe library's:\n%s", got.String(), want.String())
	}
}

// TestTableFitsWidth: with a limit, every line fits, long cells wrap at
// spaces and keep all their words, and an over-long header is cut with an
// ellipsis.
func TestTableFitsWidth(t *testing.T) {
	var b strings.Builder
	tb := newASCIITable(&b, 40, "task", "a-very-long-header-name", "command")
	long := "a rather long command line that makes the table wide"
	if err := tb.Append("1/0", "x", long); err != nil {
		t.Fatal(err)
	}
	if err := tb.Append("1/1", "日本語のテキストです", "supercalifragilisticexpialidocious"); err != nil {
		t.Fatal(err)
	}
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := textWidth(l); w > 40 {
			t.Errorf("line %q is %d columns wide, want <= 40", l, w)
		}
	}
	for _, word := range strings.Fields(long) {
		if !strings.Contains(out, word) {
			t.Errorf("word %q of the wrapped cell is missing:\n%s", word, out)
		}
	}
	if !strings.Contains(out, "…") || strings.Contains(out, "a-very-long-header-name") {
		t.Errorf("the long header is not cut:\n%s", out)
	}
	if got := strings.Count(out, "\n"); got < 8 {
		t.Errorf("%d lines: cells did not wrap:\n%s", got, out)
	}
}

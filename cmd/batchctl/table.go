package main

// The CLI's ASCII tables. batchctl draws its own rather than link a table
// library: the one it used built width caches and compiled expressions in
// its package init, which every run paid for (about 0.8 ms of a 5 ms
// `batchctl --version`), table or not.

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// table is an ASCII table: a centred header, left-aligned cells, cells
// with newlines over several lines, and, with a width limit, columns
// narrowed until the table fits (cells wrap at spaces, headers are cut
// with an ellipsis).
type table struct {
	w        io.Writer
	maxWidth int // 0: no limit
	header   []string
	rows     [][]string
}

// newASCIITable returns a table with the given header that renders to w,
// no wider than maxWidth columns when maxWidth > 0.
func newASCIITable(w io.Writer, maxWidth int, header ...any) *table {
	return &table{w: w, maxWidth: maxWidth, header: cells(header)}
}

// Header replaces the table's header.
func (t *table) Header(header ...any) { t.header = cells(header) }

// Append adds a row: its values printed as fmt.Sprint does (nil as an
// empty cell), or the strings of a single []string.
func (t *table) Append(row ...any) error {
	if len(row) == 1 {
		if ss, ok := row[0].([]string); ok {
			row = make([]any, len(ss))
			for i, s := range ss {
				row[i] = s
			}
		}
	}
	t.rows = append(t.rows, cells(row))
	return nil
}

// cells turns values into trimmed cell texts.
func cells(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		switch x := v.(type) {
		case nil:
		case string:
			out[i] = strings.TrimSpace(x)
		default:
			out[i] = strings.TrimSpace(fmt.Sprint(x))
		}
	}
	return out
}

// Render writes the table.
func (t *table) Render() error {
	n := len(t.header)
	for _, r := range t.rows {
		n = max(n, len(r))
	}
	if n == 0 {
		return nil
	}
	widths := make([]int, n)
	grow := func(r []string) {
		for i, c := range r {
			for _, l := range strings.Split(c, "\n") {
				widths[i] = max(widths[i], textWidth(l))
			}
		}
	}
	grow(t.header)
	for _, r := range t.rows {
		grow(r)
	}
	for i := range widths {
		widths[i] = max(widths[i], 1)
	}
	if t.maxWidth > 0 {
		fitWidths(widths, t.maxWidth)
	}
	bw := bufio.NewWriter(t.w)
	rule := ruleLine(widths)
	bw.WriteString(rule)
	if len(t.header) > 0 {
		h := make([][]string, n)
		for i := range h {
			var s string
			if i < len(t.header) {
				s = t.header[i]
			}
			h[i] = []string{cut(strings.ReplaceAll(s, "\n", " "), widths[i])}
		}
		writeRow(bw, widths, h, true)
		bw.WriteString(rule)
	}
	for _, r := range t.rows {
		lines := make([][]string, n)
		for i := range lines {
			var s string
			if i < len(r) {
				s = r[i]
			}
			lines[i] = wrap(s, widths[i])
		}
		writeRow(bw, widths, lines, false)
	}
	if len(t.rows) > 0 {
		bw.WriteString(rule)
	}
	return bw.Flush()
}

// fitWidths narrows the widest columns, one column at a time, until the
// table (cells plus " | " borders) is no wider than limit or every column
// is down to minColumn.
func fitWidths(widths []int, limit int) {
	const minColumn = 4
	total := func() int {
		s := 1
		for _, w := range widths {
			s += w + 3
		}
		return s
	}
	for total() > limit {
		widest := -1
		for i, w := range widths {
			if w > minColumn && (widest < 0 || w > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return
		}
		widths[widest]--
	}
}

// ruleLine is "+----+---+\n" for the widths.
func ruleLine(widths []int) string {
	var b strings.Builder
	b.WriteByte('+')
	for _, w := range widths {
		b.WriteString(strings.Repeat("-", w+2))
		b.WriteByte('+')
	}
	b.WriteByte('\n')
	return b.String()
}

// writeRow writes one row whose cells are lines, as many lines high as
// its tallest cell.
func writeRow(w *bufio.Writer, widths []int, lines [][]string, center bool) {
	height := 1
	for _, l := range lines {
		height = max(height, len(l))
	}
	for k := 0; k < height; k++ {
		w.WriteByte('|')
		for i, wd := range widths {
			var s string
			if k < len(lines[i]) {
				s = lines[i][k]
			}
			pad := wd - textWidth(s)
			left := 0
			if center {
				left = pad / 2
			}
			w.WriteByte(' ')
			w.WriteString(strings.Repeat(" ", left))
			w.WriteString(s)
			w.WriteString(strings.Repeat(" ", pad-left))
			w.WriteString(" |")
		}
		w.WriteByte('\n')
	}
}

// wrap splits s into lines no wider than width: at its newlines, then at
// spaces, and inside words longer than width.
func wrap(s string, width int) []string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			for textWidth(word) > width {
				if line != "" {
					out = append(out, line)
					line = ""
				}
				head, rest := splitAt(word, width)
				out = append(out, head)
				word = rest
			}
			switch {
			case line == "":
				line = word
			case textWidth(line)+1+textWidth(word) <= width:
				line += " " + word
			default:
				out = append(out, line)
				line = word
			}
		}
		out = append(out, line)
	}
	return out
}

// cut shortens s to width columns, ending it with "…" when it was longer.
func cut(s string, width int) string {
	if textWidth(s) <= width {
		return s
	}
	head, _ := splitAt(s, width-1)
	return head + "…"
}

// splitAt splits s after its first width columns (at least one rune).
func splitAt(s string, width int) (string, string) {
	w := 0
	for i, r := range s {
		rw := runeWidth(r)
		if w+rw > width && i > 0 {
			return s[:i], s[i:]
		}
		w += rw
	}
	return s, ""
}

// textWidth is the number of terminal columns s takes.
func textWidth(s string) int {
	if isASCII(s) {
		return len(s)
	}
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// runeWidth is the columns r takes: 0 for combining marks and controls,
// 2 for East Asian wide and fullwidth runes and emoji, else 1.
func runeWidth(r rune) int {
	switch {
	case r < 0x20 || r == 0x7f:
		return 0
	case r < 0x300:
		return 1
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200b:
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf && r != 0x303f,
		r >= 0xac00 && r <= 0xd7a3, r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f,
		r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runSimApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := newApp(&out, &errb).RunContext(context.Background(), append([]string{"batchd", "sim"}, args...))
	return out.String(), err
}

// TestSimRun and the report test do not run in parallel (see
// worker_test.go: urfave/cli v2 writes its global HelpFlag on every run).
func TestSimRun(t *testing.T) {
	out, err := runSimApp(t, "run", "--seeds", "2", "--duration", "48h", "--warmup", "12h", "-p", "srpt-x-fcfs,interactive-srpt")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"visible response (s)", "srpt×fcfs / none / suspend", "interactive-srpt / none / suspend", "4 runs in"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runSimApp(t, "run", "-w", "cluster", "--slots", "64", "--duration", "10m", "--warmup", "2m", "--seeds", "1", "-p", "srpt-x-fcfs", "-s", "best-effort-late,budgeted-4", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "budgeted-4") {
		t.Errorf("csv output:\n%s", out)
	}
	if _, err := runSimApp(t, "run", "-p", "lifo"); err == nil || !strings.Contains(err.Error(), "unknown policy") {
		t.Errorf("bad policy: err = %v", err)
	}
}

func TestSimReportWritesFiguresAndMarkdown(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	if _, err := runSimApp(t, "report", "--quick", "-q", "--only", "mixed", "--out", dir, "--cache", cache); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# batchd sim", "![Mixed workload", "(fig/mixed-ablation.svg)", "scheduler", "|:--", "How the simulator reads the papers"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	for _, f := range []string{"mixed-ablation.svg", "mixed-ablation.png", "mixed-ablation.csv", "mixed-table1.csv"} {
		if st, err := os.Stat(filepath.Join(dir, "fig", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "fig", "mixed-ablation.svg"))
	if !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) {
		t.Error("mixed-ablation.svg is not an SVG")
	}
	png, _ := os.ReadFile(filepath.Join(dir, "fig", "mixed-ablation.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("mixed-ablation.png is not a PNG")
	}
	// A second report from the cache runs nothing and writes the same text.
	if err := os.Remove(filepath.Join(dir, "results.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := runSimApp(t, "report", "--quick", "-q", "--only", "mixed", "--out", dir, "--cache", cache); err != nil {
		t.Fatal(err)
	}
	md2, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil || !bytes.Equal(md, md2) {
		t.Errorf("report from cache differs (err %v)", err)
	}
}

// The report's prose quotes results only through claims: every {{field}}
// of the notes names a claim reference, every reference is used, and the
// only percentages and factors written into the text are the papers' and
// the workloads' parameters. A quick sweep fills the Petrou fields.
func TestSimReportNotesFromClaims(t *testing.T) {
	fields := regexp.MustCompile(`\{\{(\w+)\}\}`).FindAllStringSubmatch(notesTemplate, -1)
	used := map[string]bool{}
	for _, f := range fields {
		if notesDerived[f[1]] {
			continue
		}
		if _, ok := notesRefs[f[1]]; !ok {
			t.Errorf("notes field {{%s}} names no claim", f[1])
		}
		used[f[1]] = true
	}
	for name := range notesRefs {
		if !used[name] {
			t.Errorf("claim reference %q is not used in the notes", name)
		}
	}
	// Papers' numbers, loads, thresholds and parameters only.
	allowed := map[string]bool{"50%": true, "14%": true, "34%": true, "4%": true, "40%": true, "20%": true, "10%": true, "5%": true, "30%": true, "60%": true, "80%": true, "90%": true, "4×": true, "1.537": true, "1.525": true, "1.595": true, "2×": true, "95%": true, "1.259": true, "45%": true, "1%": true}
	for _, n := range regexp.MustCompile(`\d+(\.\d+)?[%×]|\d+\.\d{3}`).FindAllString(notesTemplate, -1) {
		if !allowed[n] {
			t.Errorf("notes hold the fixed number %q: quote a claim instead", n)
		}
	}
	dir := t.TempDir()
	if _, err := runSimApp(t, "report", "--quick", "-q", "--only", "petrou-sweep", "--sweep-seeds", "2", "--out", dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	notes := string(md[bytes.Index(md, []byte("## How the simulator reads")):])
	if strings.Contains(notes, "{{") {
		t.Errorf("notes left fields unfilled")
	}
	// The sweep's claims (by key) are filled; the other experiments' read
	// "(not run)", their verdicts "not measured".
	notRun := 0
	for _, f := range fields {
		if ref := notesRefs[f[1]]; strings.Contains(ref, "|") || strings.HasPrefix(ref, "node-") || strings.HasPrefix(ref, "cluster-") || strings.HasPrefix(ref, "hopper-") || strings.HasPrefix(ref, "decide") || strings.HasPrefix(ref, "epsfair-") {
			notRun++
		}
	}
	if got := strings.Count(notes, "(not run)"); got != notRun {
		t.Errorf("notes: %d fields not run, want %d (the other experiments')", got, notRun)
	}
}

// Axis ticks fall on round values labelled with the decimals they need:
// not 125.00 and −25.00, nor 17500.0.
func TestRoundTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{-30, 130, "-20 0 20 40 60 80 100 120"},
		{0, 18000, "0 2500 5000 7500 10000 12500 15000 17500"},
		{0, 1, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0.95, 2.6, "1.00 1.25 1.50 1.75 2.00 2.25 2.50"},
	} {
		var got []string
		for _, tk := range (roundTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("ticks on [%g, %g] = %q, want %q", c.lo, c.hi, g, c.want)
		}
	}
}

// A value axis ends on labelled ticks: bars up to 98.6 with their error
// bars get an axis to 100, not one that stops at the bar's top.
func TestRoundOut(t *testing.T) {
	for _, c := range []struct{ lo, hi, wlo, whi float64 }{
		{0, 98.6, 0, 100},
		{-32.4, 62.1, -40, 80},
		{0.93, 2.6, 0.75, 2.75},
		{0, 1, 0, 1},
	} {
		if lo, hi := roundOut(c.lo, c.hi); math.Abs(lo-c.wlo) > 1e-9 || math.Abs(hi-c.whi) > 1e-9 {
			t.Errorf("roundOut(%g, %g) = %g, %g; want %g, %g", c.lo, c.hi, lo, hi, c.wlo, c.whi)
		}
	}
}

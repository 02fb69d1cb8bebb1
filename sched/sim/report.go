package sim

// FigureKind says how a figure is drawn.
type FigureKind string

const (
	// FigureLines plots each series as a line of points against X, with
	// optional error bars (YLo, YHi).
	FigureLines FigureKind = "lines"
	// FigureCumulative plots the fraction of runs (Y) that improved by at
	// least a factor X (Petrou Figs. 4–6, Hopper Fig. 8a), as steps.
	FigureCumulative FigureKind = "cumulative"
	// FigureBars plots grouped bars: one group per category, one bar per
	// series, with optional error bars (Petrou Figs. 7–13, Hopper Fig. 7).
	FigureBars FigureKind = "bars"
)

// Series is one named line or set of bars.
type Series struct {
	Name     string
	X, Y     []float64
	YLo, YHi []float64 // 95% CI bounds; nil when none
}

// Figure is one plot of a report.
type Figure struct {
	ID             string // file name stem, e.g. "petrou-fig4"
	Title          string
	XLabel, YLabel string
	Kind           FigureKind
	LogX, LogY     bool
	Categories     []string // FigureBars: one label per X position
	Series         []Series
	// Marks are vertical lines where a paper expects a feature (Hopper
	// Fig. 3's knee at 2/β slots per task).
	Marks []Mark
}

// Mark is a vertical line at X, named in the legend.
type Mark struct {
	X     float64
	Label string
}

// Claim sets one of the papers' numbers beside ours.
type Claim struct {
	// Key names the claim for the report's prose, which quotes claims by
	// key instead of fixed numbers (see cmd/batchd's simreport.go).
	Key    string
	Source string // "Petrou Fig. 4"
	Metric string
	Paper  string // the paper's number, as text
	Ours   Summary
	Unit   string // "×", "%", "s", ""
	// Note says how ours was computed, or why it differs from the paper.
	Note string
	// Detail keeps the claim out of the report's table of numbers (its
	// section's own table shows it); the prose may still quote it by Key.
	Detail bool
}

// Table is a plain table of text cells.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
}

// Report is what one experiment produced.
type Report struct {
	Name, Title string
	// Setup describes the workload, policies, seeds and runs in prose.
	Setup   string
	Claims  []Claim
	Tables  []Table
	Figures []Figure
	// Runs, Events and WallSeconds total the experiment's runs.
	Runs        int
	Events      int64
	WallSeconds float64
}

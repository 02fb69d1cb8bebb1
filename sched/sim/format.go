// Labels and number formats the experiments' reports share.

package sim

import (
	"fmt"
	"math"
	"strings"

	"batchd/sched"
)

// fmtCI formats a summary as "m ± h" with unit u.
func fmtCI(s Summary, u string) string {
	if s.HalfWidth > 0 {
		return sig(s.Mean) + u + " ± " + sig(s.HalfWidth)
	}
	return sig(s.Mean) + u
}

// days formats seconds as days.
func days(sec float64) string {
	return trimFloat(sec/Day) + " days"
}

func shortName(p sched.Policy, s sched.Speculation) string {
	sp := map[sched.Speculation]string{sched.SpecHopperGRASS: "H+G", sched.SpecBestEffortLATE: "LATE", sched.SpecNone: "none"}[s]
	return strings.NewReplacer("interactive-", "int-", "×", "x").Replace(string(p)) + "/" + sp
}

func polLabel(p sched.Policy) string {
	switch p {
	case sched.PolicyBatchSRPT, sched.PolicyBatchSRPTTask, sched.PolicyBatchFCFS:
		return "batch (" + string(p) + ")"
	case sched.PolicyInteractiveSRPT, sched.PolicyInteractiveFCFS:
		return "interactive (" + string(p) + ")"
	}
	return "batchactive (" + string(p) + ")"
}

func metricLabel(m Metric) string {
	switch m {
	case MetricResponse:
		return "mean visible response time (s)"
	case MetricSlowdown:
		return "mean visible slowdown"
	case MetricThroughput:
		return "task throughput (finished tasks per hour)"
	case MetricLoad:
		return "load (fraction of time busy)"
	case MetricScaled:
		return "scaled billed resources"
	}
	return string(m)
}

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

func f2(x float64) string { return fmt.Sprintf("%.2f", x) }

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

// sig formats x with about three significant digits.
func sig(x float64) string {
	switch ax := math.Abs(x); {
	case math.IsNaN(x):
		return "n/a"
	case ax >= 100:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	case ax >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

func trimFloat(x float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}

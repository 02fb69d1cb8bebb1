package main

import (
	"fmt"
	"slices"
	"strings"
)

// idleCauses splits the slot-seconds a slot stood free while a requested
// task waited for its first copy (printIdleQueued) by the event that
// opened each stretch: a task's request (the store's stamp comes before
// the scheduler's next decision) or a copy's end, by how it ended (a won
// copy's end is the report the scheduler acted on; a killed copy's is the
// kill's decision, before the worker frees the slot). Keys are "request",
// "end:won", "end:killed", ...; values slot-seconds.
func idleCauses(m map[taskKey][]cpEnd, slots int) map[string]float64 {
	type ev struct {
		t         float64
		busy, que int
		cause     string
	}
	var evs []ev
	for _, cs := range m {
		if len(cs) == 0 || cs[0].req <= 0 {
			continue
		}
		r := cs[0].req
		evs = append(evs, ev{r, 0, 1, "request"}, ev{r + cs[0].start, 0, -1, ""})
		for _, c := range cs {
			if c.end > c.start {
				evs = append(evs, ev{r + c.start, 1, 0, ""}, ev{r + c.end, -1, 0, "end:" + c.how})
			}
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { // ties in a fixed order, not the map's
		if c := cmpFloat(a.t, b.t); c != 0 {
			return c
		}
		if a.busy != b.busy {
			return a.busy - b.busy
		}
		if a.que != b.que {
			return a.que - b.que
		}
		return strings.Compare(a.cause, b.cause)
	})
	out := map[string]float64{}
	busy, que := 0, 0
	cause := ""
	for i, e := range evs {
		if i > 0 {
			if n := max(0, min(slots-busy, que)); n > 0 {
				out[cause] += float64(n) * (e.t - evs[i-1].t)
			}
		}
		before := max(0, min(slots-busy, que))
		busy, que = busy+e.busy, que+e.que
		if max(0, min(slots-busy, que)) > before && e.cause != "" {
			cause = e.cause
		}
	}
	return out
}

// fmtCauses prints causes in name order.
func fmtCauses(c map[string]float64) string {
	var ks []string
	for k := range c {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %s %.2f", k, c[k])
	}
	return b.String()
}

package main

import (
	"fmt"

	"batchd/sched"
)

// printHeard prints, over runs, how long after its stamp the live
// scheduler heard of each request call (sched.TraceTask.HeardAt: its write
// and the others in its API batch committed first), over the calls heard
// with a start decision; the others found no free slot, and their stamp
// stands.
func printHeard(runs []record) {
	type call struct {
		set sched.SetID
		at  float64
	}
	var gaps []float64
	seen := map[call]bool{}
	stamped := 0
	for _, rec := range runs {
		for _, st := range rec.Trace.Sets {
			for _, tk := range st.Tasks {
				c := call{st.ID + sched.SetID(rec.Seed<<32), tk.RequestedAt}
				if tk.RequestedAt <= 0 || seen[c] {
					continue
				}
				seen[c] = true
				if tk.HeardAt > tk.RequestedAt {
					gaps = append(gaps, tk.HeardAt-tk.RequestedAt)
				} else {
					stamped++
				}
			}
		}
	}
	if len(gaps) == 0 {
		fmt.Printf("requests heard: none recorded (%d calls at their stamps; a record made before heard times were kept?)\n", stamped)
		return
	}
	fmt.Printf("requests heard after their stamp: %d calls, median %.4f s, mean %.4f, q90 %.4f, max %.4f; %d calls started nothing when heard (at their stamps)\n",
		len(gaps), quantile(gaps, 0.5), mean(gaps), quantile(gaps, 0.9), quantile(gaps, 1), stamped)
}

package sched

import "strings"

// GrassMode names how GRASS picks speculative copies inside a job's share
// (GRASS §4–5): switching from RAS to GS for the job's last two waves (the
// paper's design), or one of the two rules alone (its ablation, §6.3).
type GrassMode string

const (
	GrassSwitch GrassMode = "switch" // default: RAS, then GS in the last two waves
	GrassGS     GrassMode = "gs"     // Greedy Speculative only
	GrassRAS    GrassMode = "ras"    // Resource Aware Speculative only
)

// GrassModes lists every GRASS mode, default first.
var GrassModes = []GrassMode{GrassSwitch, GrassGS, GrassRAS}

// ParseGrassMode accepts "switch" (or "ras→gs", "ras-gs", ""), "gs" and
// "ras", any case.
func ParseGrassMode(s string) (GrassMode, error) {
	switch n := strings.ToLower(strings.TrimSpace(s)); n {
	case "", "switch", "ras→gs", "ras-gs", "ras->gs":
		return GrassSwitch, nil
	case "gs", "ras":
		return GrassMode(n), nil
	}
	return "", Errorf(EINVALID, "unknown GRASS mode %q (want switch, gs or ras)", s)
}

// useRAS reports whether a job with queued tasks queued and share target
// speculates by RAS (else GS) under mode m: GRASS switches to GS once the
// job's queued work fits in two waves of its share.
func (m GrassMode) useRAS(queued, target int) bool {
	switch m {
	case GrassGS:
		return false
	case GrassRAS:
		return true
	}
	return queued > 2*target
}

package pool

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPilotTime(t *testing.T) {
	t.Parallel()
	const m = time.Minute
	for _, tc := range []struct {
		name           string
		longest        float64
		margin, lo, hi time.Duration
		want           time.Duration
	}{
		{"no sizing", 600, 2 * m, 0, 0, 0},
		{"longest plus margin", 600, 2 * m, 5 * m, 60 * m, 12 * m},
		{"at least the minimum", 10, 2 * m, 5 * m, 60 * m, 5 * m},
		{"at most the maximum", 7200, 2 * m, 5 * m, 60 * m, 60 * m},
		{"nothing known: the maximum", 0, 2 * m, 5 * m, 60 * m, 60 * m},
		{"huge estimate does not overflow", 1e300, 2 * m, 5 * m, 60 * m, 60 * m},
	} {
		if got := pilotTime(tc.longest, tc.margin, tc.lo, tc.hi); got != tc.want {
			t.Errorf("%s: pilotTime(%g, %v, %v, %v) = %v, want %v", tc.name, tc.longest, tc.margin, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestSlurmLimit(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		30 * time.Second:              "1",
		12 * time.Minute:              "12",
		12*time.Minute + time.Second:  "13",
		25 * time.Hour:                "1-01:00:00",
		49*time.Hour + 30*time.Minute: "2-01:30:00",
	} {
		if got := slurmLimit(d); got != want {
			t.Errorf("slurmLimit(%v) = %q, want %q", d, got, want)
		}
	}
}

// With TimeMax set, each pilot's time limit follows the queued work's
// longest expected run time as the server answers it, within the limits;
// Slurm gets it as --time instead of the pool's fixed one.
func TestPoolSizesTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		longest float64
		want    time.Duration
	}{
		{600, 12 * time.Minute}, // 10 min + 2 min margin
		{30, 5 * time.Minute},   // the minimum
		{86400, time.Hour},      // the maximum
		{0, time.Hour},          // nothing known
	} {
		e, s := &engine{}, &server{requested: 1, longest: tc.longest}
		p := newTestPool(t, Config{TimeMin: 5 * time.Minute, TimeMax: time.Hour}, e, s)
		if err := p.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(e.submitted) != 1 || e.submitted[0].Time != tc.want {
			t.Errorf("longest queued %g s: submitted %+v, want one pilot of %v", tc.longest, e.submitted, tc.want)
		}
	}
	// Without TimeMax the pool leaves the limit to the engine.
	e, s := &engine{}, &server{requested: 1, longest: 600}
	if err := newTestPool(t, Config{}, e, s).Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(e.submitted) != 1 || e.submitted[0].Time != 0 {
		t.Errorf("no sizing: submitted %+v, want Time 0", e.submitted)
	}
	sl := &Slurm{Pool: "p", Time: "7"}
	args := sl.SbatchArgs(PilotSpec{Class: Requested, Slots: 1, Time: 12 * time.Minute})
	if !slices.Contains(args, "--time=12") || slices.Contains(args, "--time=7") {
		t.Errorf("sbatch %v, want --time=12 and not the fixed 7", args)
	}
	if args := sl.SbatchArgs(PilotSpec{Class: Requested, Slots: 1}); !slices.Contains(args, "--time=7") {
		t.Errorf("sbatch %v, want the fixed --time=7", args)
	}
}

// Pilots ask for as many GPUs as the most a queued task asks for, and
// Slurm gets them as --gres=gpu:N; without GPU work, no --gres.
func TestPoolAsksForGPUs(t *testing.T) {
	t.Parallel()
	for _, gpus := range []int32{0, 2} {
		e, s := &engine{}, &server{requested: 1, gpus: gpus}
		if err := newTestPool(t, Config{}, e, s).Round(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(e.submitted) != 1 || e.submitted[0].GPUs != int(gpus) {
			t.Errorf("queued tasks ask for %d GPUs: submitted %+v", gpus, e.submitted)
		}
	}
	sl := &Slurm{Pool: "p"}
	if args := sl.SbatchArgs(PilotSpec{Class: Requested, Slots: 1, GPUs: 2}); !slices.Contains(args, "--gres=gpu:2") {
		t.Errorf("sbatch %v, want --gres=gpu:2", args)
	}
	for _, a := range sl.SbatchArgs(PilotSpec{Class: Requested, Slots: 1}) {
		if strings.HasPrefix(a, "--gres") {
			t.Errorf("no GPU work, but sbatch gets %s", a)
		}
	}
}

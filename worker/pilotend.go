package worker

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// DefaultEndMargin is how long before its allocation ends a pilot stops
// taking copies when Config.EndMargin is zero: room for the batch
// system's SIGTERM, the hand-back and the goodbye. It is cut to a quarter
// of the time the worker has left when it starts.
const DefaultEndMargin = 30 * time.Second

// takeUntil is when the worker stops taking copies: its allocation's end
// (Config.EndsAt) less the margin; zero when it has no end.
func takeUntil(endsAt time.Time, margin time.Duration, now time.Time) time.Time {
	if endsAt.IsZero() {
		return time.Time{}
	}
	if margin <= 0 {
		margin = min(DefaultEndMargin, max(0, endsAt.Sub(now))/4)
	}
	return endsAt.Add(-margin)
}

// endsAtProto is takeUntil for the Register call (nil: no end).
func (a *agent) endsAtProto() *timestamppb.Timestamp {
	if a.takeUntil.IsZero() {
		return nil
	}
	return timestamppb.New(a.takeUntil)
}

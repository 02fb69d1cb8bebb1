package store_test

import (
	"context"
	"testing"

	"batchd/sched"
	"batchd/store"
)

// A set's route is kept from its creation: the set's view, the list of
// sets and a restart's snapshot show it; a worker's pool and partition
// are kept with it, and RouteKnown answers whether any worker has used
// a route. The same idempotency key with another route is a conflict.
func TestRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := setup(t)
	route := sched.Route{Pool: "slurm", Partition: "long"}
	t.Run("OK", func(t *testing.T) {
		res, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "routed", Tasks: echo(2), Route: route, IdempotencyKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Set.Route != route {
			t.Errorf("Disclose's set route %+v, want %+v", res.Set.Route, route)
		}
		plain, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "plain", Tasks: echo(1)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.GetTaskSet(ctx, "u", res.Set.ID)
		if err != nil || got.Route != route {
			t.Errorf("GetTaskSet route %+v (%v), want %+v", got.Route, err, route)
		}
		sets, _, err := db.ListTaskSets(ctx, "u", 10, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sets {
			want := sched.Route{}
			if s.ID == res.Set.ID {
				want = route
			}
			if s.Route != want {
				t.Errorf("listed set %d route %+v, want %+v", s.ID, s.Route, want)
			}
		}
		snap, err := db.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snap.Sets {
			if (s.Set == res.Set.ID) != (s.Route == route) || (s.Set == plain.Set.ID && !s.Route.IsZero()) {
				t.Errorf("snapshot set %d route %+v", s.Set, s.Route)
			}
		}
		if r, err := db.SetRoute(ctx, res.Set.ID); err != nil || r != route {
			t.Errorf("SetRoute = %+v, %v; want %+v", r, err, route)
		}
	})
	t.Run("ErrReplayOtherRoute", func(t *testing.T) {
		_, err := db.Disclose(ctx, store.DiscloseInput{Owner: "u", Name: "routed", Tasks: echo(2), Route: sched.Route{Pool: "other"}, IdempotencyKey: "k"})
		if sched.ErrorCode(err) == "" {
			t.Fatal("the key with another route replayed the first answer")
		}
	})
	t.Run("Workers", func(t *testing.T) {
		if known, err := db.RouteKnown(ctx, route); err != nil || known {
			t.Fatalf("RouteKnown before any worker = %v, %v; want false", known, err)
		}
		if _, err := db.RegisterWorker(ctx, store.RegisterInput{Worker: "w", Slots: 1, Route: route}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []sched.Route{route, {Pool: "slurm"}, {Partition: "long"}} {
			if known, err := db.RouteKnown(ctx, r); err != nil || !known {
				t.Errorf("RouteKnown(%+v) = %v, %v; want true", r, known, err)
			}
		}
		if known, _ := db.RouteKnown(ctx, sched.Route{Pool: "gpu"}); known {
			t.Error("RouteKnown of a pool no worker used = true")
		}
		ws, err := db.ListWorkers(ctx)
		if err != nil || len(ws) != 1 || ws[0].Route != route {
			t.Errorf("ListWorkers = %+v, %v; want w in %+v", ws, err, route)
		}
		snap, err := db.Load(ctx)
		if err != nil || len(snap.Workers) != 1 || snap.Workers[0].Route != route {
			t.Errorf("snapshot workers %+v, %v; want w in %+v", snap.Workers, err, route)
		}
	})
}

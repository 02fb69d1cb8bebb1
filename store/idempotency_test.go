package store_test

import (
	"context"
	"database/sql"
	"testing"

	"batchd/sched"
	"batchd/store"
)

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		db, _ := setup(t)
		in := store.DiscloseInput{Owner: "u", Name: "n", Tasks: echo(2), IdempotencyKey: "k"}
		first, err := db.Disclose(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		in.Tasks = echo(2) // equal content, other slices and maps
		again, err := db.Disclose(ctx, in)
		if err != nil || !again.Replayed || again.Set.ID != first.Set.ID || again.Count != 2 {
			t.Fatalf("replay: %+v, %v", again, err)
		}
		known, err := db.IdempotencyKeyKnown(ctx, "u", "k", in.Hash())
		if err != nil || !known {
			t.Fatalf("known: %v, %v", known, err)
		}
	})
	t.Run("ErrOtherContent", func(t *testing.T) {
		db, _ := setup(t)
		in := store.DiscloseInput{Owner: "u", Name: "n", Tasks: echo(2), IdempotencyKey: "k"}
		if _, err := db.Disclose(ctx, in); err != nil {
			t.Fatal(err)
		}
		other := in
		other.Tasks = echo(3)
		_, err := db.Disclose(ctx, other)
		code(t, err, sched.ECONFLICT)
		_, err = db.IdempotencyKeyKnown(ctx, "u", "k", other.Hash())
		code(t, err, sched.ECONFLICT)
		// Another owner's key of the same name is another key.
		other.Owner = "v"
		if res, err := db.Disclose(ctx, other); err != nil || res.Replayed {
			t.Fatalf("other owner: %+v, %v", res, err)
		}
	})
	// A key recorded before migration 0004 has no hash: it replays whatever
	// comes with it, as it did before.
	t.Run("OKKeyWithoutHash", func(t *testing.T) {
		db, _ := setup(t)
		in := store.DiscloseInput{Owner: "u", Name: "n", Tasks: echo(2), IdempotencyKey: "old"}
		first, err := db.Disclose(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := sql.Open("sqlite3", "file:"+db.Path+"?_busy_timeout=10000")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`UPDATE idempotency_keys SET request_hash = ''`); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		in.Tasks = echo(5)
		again, err := db.Disclose(ctx, in)
		if err != nil || !again.Replayed || again.Set.ID != first.Set.ID || again.Count != 2 {
			t.Fatalf("replay of a key without hash: %+v, %v", again, err)
		}
	})
}

// The content hash covers every field of a disclose and nothing else.
func TestDiscloseHash(t *testing.T) {
	t.Parallel()
	base := func() store.DiscloseInput {
		return store.DiscloseInput{Owner: "u", SetID: 0, Name: "n", Tasks: []sched.TaskSpec{
			{Argv: []string{"a", "b"}, Env: map[string]string{"X": "1", "Y": "2"}, Dir: "/d", EstimateSeconds: 1, TimeoutSeconds: 2, DeadlineSeconds: 3}}}
	}
	h := base().Hash()
	same := base()
	same.Tasks[0].Env = map[string]string{"Y": "2", "X": "1"}
	same.Owner, same.IdempotencyKey = "other", "k" // not content
	if same.Hash() != h {
		t.Fatal("equal content hashes differently")
	}
	for name, change := range map[string]func(*store.DiscloseInput){
		"SetID":    func(in *store.DiscloseInput) { in.SetID = 1 },
		"Name":     func(in *store.DiscloseInput) { in.Name = "m" },
		"Request":  func(in *store.DiscloseInput) { in.Request = true },
		"Argv":     func(in *store.DiscloseInput) { in.Tasks[0].Argv = []string{"ab"} },
		"ArgvEnd":  func(in *store.DiscloseInput) { in.Tasks[0].Argv = []string{"a", "b", ""} },
		"Env":      func(in *store.DiscloseInput) { in.Tasks[0].Env["X"] = "2" },
		"EnvKey":   func(in *store.DiscloseInput) { in.Tasks[0].Env = map[string]string{"X1": "", "Y": "2"} },
		"Dir":      func(in *store.DiscloseInput) { in.Tasks[0].Dir = "" },
		"Estimate": func(in *store.DiscloseInput) { in.Tasks[0].EstimateSeconds = 1.5 },
		"NoSpec":   func(in *store.DiscloseInput) { in.Tasks[0].NoSpeculation = true },
		"Timeout":  func(in *store.DiscloseInput) { in.Tasks[0].TimeoutSeconds = 0 },
		"Deadline": func(in *store.DiscloseInput) { in.Tasks[0].DeadlineSeconds = 0 },
		"OneMore":  func(in *store.DiscloseInput) { in.Tasks = append(in.Tasks, in.Tasks[0]) },
	} {
		in := base()
		change(&in)
		if in.Hash() == h {
			t.Errorf("%s: the hash did not change", name)
		}
	}
	// Tasks added in pieces hash like all at once.
	in := base()
	in.Tasks = append(in.Tasks, sched.TaskSpec{Argv: []string{"c"}})
	d := store.NewDiscloseHasher(in.SetID, in.Name, in.Request)
	d.Add(in.Tasks[0])
	d.Add(in.Tasks[1])
	if d.Sum() != in.Hash() {
		t.Fatal("pieces hash differently")
	}
}

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"batchd/client"
	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

// The users' mix: what people and their scripts call. 40% ListTaskSets
// (a page of 50), 40% GetTaskSet of one of the client's own sets, 10%
// Disclose of a new set of 1-3 `true` tasks, and 10% Request of one task
// of one of its own sets. Each client keeps the sets it disclosed, so
// that sets and requested tasks pile up as they do under real users.

// mixUser is a user the mix calls as.
type mixUser struct {
	name, token string
}

var (
	mixUsersMu  sync.Mutex
	mixUsersFor = map[*benchServer][]mixUser{}
)

// mixUsers adds n users named prefix00... to the server as its admin, once
// per server and prefix (the shared servers outlive a benchmark's calls).
func mixUsers(b *testing.B, bs *benchServer, prefix string, n int) []mixUser {
	b.Helper()
	mixUsersMu.Lock()
	defer mixUsersMu.Unlock()
	if us := mixUsersFor[bs]; len(us) > 0 && strings.HasPrefix(us[0].name, prefix) {
		return us
	}
	admin := batchv1connect.NewUserServiceClient(client.WithToken(&http.Client{}, bs.token), bs.url)
	var out []mixUser
	for i := range n {
		name := fmt.Sprintf("%s%02d", prefix, i)
		u, err := admin.AddUser(context.Background(), &batchv1.AddUserRequest{Name: name, Role: "user"})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, mixUser{name: name, token: u.Token})
	}
	mixUsersFor[bs] = out
	return out
}

// mixSet is a set a client disclosed and how many tasks it has.
type mixSet struct {
	id    int64
	tasks int32
}

// mixLoad is a running group of closed-loop mix clients.
type mixLoad struct {
	wg, warm  sync.WaitGroup
	measuring atomic.Bool
	mu        sync.Mutex
	reads     []float64 // ms, calls that started and ended while measuring
	writes    []float64
	refused   map[connect.Code]int
	calls     atomic.Int64 // every call answered, measured or not
}

// startMix starts n clients of the users' mix, each with its own
// connection, spread over users, until ctx ends. Each waits an exponential
// think time with mean think between calls; with think 0 each calls again
// as soon as it has its answer (closed loop). seed makes the clients'
// choices differ between groups.
func startMix(ctx context.Context, bs *benchServer, users []mixUser, n int, seed uint64, think time.Duration) *mixLoad {
	ml := &mixLoad{refused: map[connect.Code]int{}}
	for i := range n {
		u := users[i%len(users)]
		hc := client.WithToken(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}, u.token)
		sets := batchv1connect.NewTaskSetServiceClient(hc, bs.url)
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		ml.wg.Add(1)
		ml.warm.Add(1)
		go func() {
			defer ml.wg.Done()
			// The first call connects and gives the client a set of its
			// own; it is not counted.
			var own []mixSet
			if r, err := sets.Disclose(ctx, &batchv1.DiscloseRequest{Name: "mix",
				Tasks: []*batchv1.TaskSpec{{Argv: []string{"true"}}}}); err == nil {
				own = append(own, mixSet{id: r.TaskSet.GetId(), tasks: 1})
			}
			ml.warm.Done()
			for ctx.Err() == nil {
				if len(own) == 0 {
					return // could not even disclose once: the server refuses it
				}
				if think > 0 {
					t := time.NewTimer(time.Duration(rng.ExpFloat64() * float64(think)))
					select {
					case <-ctx.Done():
						t.Stop()
						return
					case <-t.C:
					}
				}
				p := rng.IntN(10)
				counted := ml.measuring.Load()
				t0 := time.Now()
				var err error
				write := false
				switch {
				case p < 4:
					_, err = sets.ListTaskSets(ctx, &batchv1.ListTaskSetsRequest{PageSize: 50})
				case p < 8:
					_, err = sets.GetTaskSet(ctx, &batchv1.GetTaskSetRequest{SetId: own[rng.IntN(len(own))].id, PageSize: 50})
				case p < 9:
					write = true
					k := 1 + rng.IntN(3)
					specs := make([]*batchv1.TaskSpec, k)
					for j := range specs {
						specs[j] = &batchv1.TaskSpec{Argv: []string{"true"}}
					}
					var r *batchv1.DiscloseResponse
					r, err = sets.Disclose(ctx, &batchv1.DiscloseRequest{Name: "mix", Tasks: specs})
					if err == nil {
						own = append(own, mixSet{id: r.TaskSet.GetId(), tasks: int32(k)})
					}
				default:
					write = true
					s := own[rng.IntN(len(own))]
					_, err = sets.Request(ctx, &batchv1.RequestRequest{SetId: s.id, Indexes: []int32{rng.Int32N(s.tasks)}})
				}
				if ctx.Err() != nil {
					return // the load stopped during the call: not a sample
				}
				ml.calls.Add(1)
				if !counted || !ml.measuring.Load() {
					continue
				}
				ms := float64(time.Since(t0).Microseconds()) / 1000
				ml.mu.Lock()
				switch {
				case err != nil:
					ml.refused[connect.CodeOf(err)]++
				case write:
					ml.writes = append(ml.writes, ms)
				default:
					ml.reads = append(ml.reads, ms)
				}
				ml.mu.Unlock()
			}
		}()
	}
	return ml
}

// measure counts the calls that start and end within d, once every client
// has connected.
func (ml *mixLoad) measure(d time.Duration) {
	ml.warm.Wait()
	ml.measuring.Store(true)
	time.Sleep(d) // the load runs in other goroutines and the server: wall time is the measure
	ml.measuring.Store(false)
}

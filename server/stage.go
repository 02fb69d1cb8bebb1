package server

import (
	"context"

	"batchd/store"
)

// discloseStaged discloses a new set of n tasks, more than one chunk, in
// three steps (store/stage.go): the set is created staged under the lock,
// its tasks go in chunk by chunk without it (each chunk holds the store's
// writer only, and lets other writes pass it: a worker's report waits for
// at most two chunks of DefaultStageRows rows, however many discloses
// stage at once, not for whole sets; store/writegate.go), and one last step
// under the lock makes the set visible and tells the scheduler. The caps
// are checked at the first step and again at the last (a staged set counts
// for neither open sets nor queued tasks until then). A failure or a
// canceled call after the first step drops the staged set.
func (s *Server) discloseStaged(ctx context.Context, hd discloseHeader, in store.DiscloseInput, n int) (store.DiscloseResult, error) {
	var (
		res store.DiscloseResult
		st  *store.Staged
		err error
	)
	owner := in.Owner
	s.apiWrite(func() {
		if err = s.admitDisclose(ctx, owner, hd, in, n); err != nil {
			return
		}
		st, res, err = s.db.BeginStaged(ctx, in)
	})
	if err != nil || res.Replayed {
		return res, err
	}
	infos := taskInfos(in.Tasks, in.Array, n)
	drop := func() {
		if derr := s.db.DropStaged(context.WithoutCancel(ctx), st.Set()); derr != nil {
			s.log.Error("drop a staged set", "set", st.Set(), "err", derr.Error())
		}
	}
	if err = s.db.StageTasks(ctx, st); err != nil {
		drop()
		return res, err
	}
	s.apiWrite(func() {
		if err = s.stopping(); err != nil {
			return
		}
		if err = s.checkLoad(ctx, owner, true, n); err != nil {
			return
		}
		if res, err = s.db.CommitStaged(ctx, st); err != nil || res.Replayed {
			return
		}
		s.disclosed(ctx, hd, owner, res, infos)
	})
	if err != nil || res.Replayed {
		drop()
	}
	return res, err
}

// dropStagedLeftovers drops the sets a stopped server left staged.
func (s *Server) dropStagedLeftovers(ctx context.Context) error {
	n, err := s.db.DropStagedLeftovers(ctx)
	if n > 0 {
		s.log.Info("dropped staged sets left by a stopped disclose", "sets", n)
	}
	return err
}

package pool

// A pool that restarts knows nothing of the pilots it left running or
// that ended meanwhile. It rebuilds its view from the two that do know:
// the batch system lists the pilots (Engine.List), and the server says
// which of their workers ever registered (ReportPilotsResponse.registered),
// so that a pilot that served and then ended (its time limit, say) is not
// taken for one that never could; and a pilot already ended when the pool
// first looks ended before it ran, so its end is no news to back off for.

// learnRegistered marks the pilots whose worker the server says has
// registered, live or gone.
func (p *Pool) learnRegistered(pilots []Pilot, names []string) {
	if len(names) == 0 {
		return
	}
	known := make(map[string]bool, len(names))
	for _, n := range names {
		known[n] = true
	}
	for _, pl := range pilots {
		if known[p.eng.WorkerName(pl.ID)] {
			p.registered[pl.ID] = true
		}
	}
}

// firstLook, at the pool's first round, takes the pilots that have ended
// already as judged: their ends came before this pool ran.
func (p *Pool) firstLook(pilots []Pilot) {
	if p.looked {
		return
	}
	p.looked = true
	for _, pl := range pilots {
		if pl.State == Ended {
			p.judged[pl.ID] = true
		}
	}
	if len(pilots) > 0 {
		p.log.Info("pool found its pilots", "pilots", len(pilots))
	}
}

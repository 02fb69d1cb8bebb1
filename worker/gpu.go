// GPUs: the worker offers the devices it was given (Config.GPUs) and
// gives each copy that asks for GPUs devices of its own, which its
// CUDA_VISIBLE_DEVICES lists; a copy that asks for none sees none.

package worker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// gpuPool hands the worker's GPU devices to copies: never one device to
// two copies at once. The server counts GPUs, not devices, so the pool
// has the devices a copy asks for whenever the server's count is right.
type gpuPool struct {
	mu    sync.Mutex
	order map[string]int // device -> its place in Config.GPUs
	free  []string       // in Config.GPUs order
	held  map[int64][]string
}

// newGPUPool returns a pool of devs (device names as CUDA_VISIBLE_DEVICES
// takes them: indices or UUIDs), duplicates dropped.
func newGPUPool(devs []string) *gpuPool {
	p := &gpuPool{order: map[string]int{}, held: map[int64][]string{}}
	for _, d := range devs {
		if _, dup := p.order[d]; d == "" || dup {
			continue
		}
		p.order[d] = len(p.free)
		p.free = append(p.free, d)
	}
	return p
}

// count is how many devices the worker offers.
func (p *gpuPool) count() int { return len(p.order) }

// take gives copy id n free devices, the first ones in Config.GPUs order.
func (p *gpuPool) take(id int64, n int) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.free) {
		return nil, fmt.Errorf("the copy asks for %d GPUs; %d of this worker's %d are free", n, len(p.free), len(p.order))
	}
	devs := slices.Clone(p.free[:n])
	p.free = slices.Delete(p.free, 0, n)
	p.held[id] = devs
	return devs, nil
}

// give takes back copy id's devices, if it holds any.
func (p *gpuPool) give(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	devs, ok := p.held[id]
	if !ok {
		return
	}
	delete(p.held, id)
	p.free = append(p.free, devs...)
	slices.SortFunc(p.free, func(a, b string) int { return p.order[a] - p.order[b] })
}

// gpuEnv is the environment a copy asking for n GPUs gets on a worker
// with GPUs: CUDA_VISIBLE_DEVICES naming its own devices ("" when it asks
// for none, so that it sees none), or an error when too few are free.
// A worker without GPUs sets nothing.
func (a *agent) gpuEnv(id int64, n int32) ([]string, error) {
	if a.gpus.count() == 0 {
		if n > 0 {
			return nil, fmt.Errorf("the copy asks for %d GPUs; this worker offers none", n)
		}
		return nil, nil
	}
	if n <= 0 {
		return []string{"CUDA_VISIBLE_DEVICES="}, nil
	}
	devs, err := a.gpus.take(id, int(n))
	if err != nil {
		return nil, err
	}
	return []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(devs, ",")}, nil
}

package sched

// This file is GPUs: a task may ask for GPUs of one worker (TaskInfo.GPUs),
// and a worker offers a number of them (Event.GPUs). They are counted like
// slots, without numbers: a copy takes its task's GPUs from its start to
// its end, suspended or not (a suspended process keeps its device
// memory), and a worker runs copies whose GPUs together fit in what it
// offers. Which devices a copy gets is the worker's: it knows its device
// indices and gives each copy free ones (CUDA_VISIBLE_DEVICES). A worker
// that offers none runs no task that asks for GPUs.

// MaxGPUs bounds a task's request, MaxWorkerGPUs a worker's offer.
const (
	MaxGPUs       = 64
	MaxWorkerGPUs = 1 << 10
)

// gpuFits reports whether w has t's GPUs free now.
func (w *worker) gpuFits(t *task) bool {
	return t.gpus == 0 || w.gpus-w.gpuUsed >= int32(t.gpus)
}

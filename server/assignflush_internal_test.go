package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"batchd/proto/batch/v1/batchv1connect"
)

// flushCounter is a response that counts its flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

// An Assignments burst of five messages, each flushed as Connect does, is
// flushed once; elsewhere, and outside a burst, every flush goes through.
func TestHoldFlushesOneFlushABurst(t *testing.T) {
	for _, c := range []struct {
		path string
		want int
	}{{batchv1connect.WorkerServiceAssignmentsProcedure, 1 + 1}, {batchv1connect.TaskSetServiceWatchTaskSetProcedure, 5 + 1}} {
		w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
		h := holdFlushes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = sendBurst(r.Context(), func() error {
				for range 5 {
					_, _ = w.Write([]byte("m"))
					w.(http.Flusher).Flush()
				}
				return nil
			})
			w.(http.Flusher).Flush() // outside the burst
		}))
		h.ServeHTTP(w, httptest.NewRequest("POST", c.path, nil))
		if w.flushes != c.want || w.Body.String() != "mmmmm" {
			t.Errorf("%s: %d flushes of %q, want %d of mmmmm", c.path, w.flushes, w.Body.String(), c.want)
		}
	}
}

package server

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// waiting reports how many requests wait for the budget.
func (a *admission) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiters)
}

// untilWaiting blocks until n requests wait (a hang guard only).
func untilWaiting(t *testing.T, a *admission, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); a.waiting() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests wait, want %d", a.waiting(), n)
		}
	}
}

func TestAdmission(t *testing.T) {
	bg := context.Background()
	t.Run("QueuesThenAdmitsInOrder", func(t *testing.T) {
		a := newAdmission(100)
		a.wait = time.Hour // never refuse here
		relA, err := a.acquire(bg, "a", 60, false)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 2)
		go func() {
			rel, err := a.acquire(bg, "b", 50, false)
			if err == nil {
				rel()
				got <- "b"
			}
		}()
		untilWaiting(t, a, 1)
		go func() {
			rel, err := a.acquire(bg, "c", 30, false) // fits, but b came first
			if err == nil {
				rel()
				got <- "c"
			}
		}()
		untilWaiting(t, a, 2)
		if in, _, _, _ := a.stats(); in != 60 {
			t.Fatalf("in use %d, want 60", in)
		}
		relA()
		if first, second := <-got, <-got; first != "b" && second != "b" {
			t.Fatalf("admitted %s, %s; want b among them", first, second)
		}
		if in, peak, waited, refused := a.stats(); in != 0 || peak > 100 || waited != 2 || refused != 0 {
			t.Fatalf("in use %d, peak %d, waited %d, refused %d", in, peak, waited, refused)
		}
	})
	t.Run("UserCapPassesOverToOthers", func(t *testing.T) {
		a := newAdmission(100) // 50 per user
		a.wait = time.Hour
		rel1, err := a.acquire(bg, "a", 40, false)
		if err != nil {
			t.Fatal(err)
		}
		defer rel1()
		aDone := make(chan struct{})
		go func() {
			if rel, err := a.acquire(bg, "a", 20, false); err == nil { // past a's cap
				rel()
			}
			close(aDone)
		}()
		untilWaiting(t, a, 1)
		relB, err := a.acquire(bg, "b", 20, false) // not behind a's own cap
		if err != nil {
			t.Fatal(err)
		}
		relB()
		select {
		case <-aDone:
			t.Fatal("a went past its cap")
		default:
		}
		rel1()
		<-aDone
	})
	t.Run("ErrOverBudgetAfterWait", func(t *testing.T) {
		a := newAdmission(100)
		a.wait = time.Millisecond
		rel, err := a.acquire(bg, "a", 100, false)
		if err != nil {
			t.Fatal(err)
		}
		defer rel()
		if _, err := a.acquire(bg, "b", 1, false); connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("got %v, want ResourceExhausted", err)
		}
		if a.waiting() != 0 {
			t.Fatal("a refused request still waits")
		}
		if _, _, _, refused := a.stats(); refused != 1 {
			t.Fatalf("refused %d, want 1", refused)
		}
	})
	t.Run("ErrBiggerThanBudget", func(t *testing.T) {
		a := newAdmission(100)
		if _, err := a.acquire(bg, "a", 101, false); connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("got %v, want ResourceExhausted", err)
		}
	})
	t.Run("WorkersNeverWait", func(t *testing.T) {
		a := newAdmission(100)
		a.wait = time.Hour
		rel, err := a.acquire(bg, "a", 100, false)
		if err != nil {
			t.Fatal(err)
		}
		defer rel()
		relW, err := a.acquire(bg, "w", 10, true)
		if err != nil {
			t.Fatal(err)
		}
		relW()
	})
	t.Run("ErrCanceledWhileWaiting", func(t *testing.T) {
		a := newAdmission(100)
		a.wait = time.Hour
		rel, err := a.acquire(bg, "a", 100, false)
		if err != nil {
			t.Fatal(err)
		}
		defer rel()
		c, cancel := context.WithCancel(bg)
		cancel()
		if _, err := a.acquire(c, "b", 1, false); connect.CodeOf(err) != connect.CodeCanceled {
			t.Fatalf("got %v, want Canceled", err)
		}
	})
}

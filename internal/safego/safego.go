// Package safego runs goroutines whose panics reach their caller: Go's
// runtime ends the process with exit status 2 on a panic that the goroutine
// raising it does not recover, and nothing else can recover it, so a bug
// in a trial's goroutine read to scripts as their own usage error.
package safego

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Panic is a goroutine's recovered panic: its value and the goroutine's
// trace where it panicked. Panicking with it in the caller's goroutine
// keeps that trace.
type Panic struct {
	Value any
	Stack []byte
}

func (p Panic) String() string { return fmt.Sprintf("%v\n%s", p.Value, p.Stack) }

// Go runs f in a goroutine; a panic of f's is sent on panics.
func Go(panics chan<- Panic, f func()) {
	go func() {
		defer func() {
			if v := recover(); v != nil {
				panics <- Panic{v, debug.Stack()}
			}
		}()
		f()
	}()
}

// Group runs goroutines and waits for them, as a sync.WaitGroup, where the
// caller waits for every one anyway: a panic of one is raised again in
// Wait's caller, once they are all done. The zero Group is ready to use.
type Group struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	first *Panic
}

// Go runs f in a goroutine of the group.
func (g *Group) Go(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done() // after the panic is kept
		defer func() {
			if v := recover(); v != nil {
				g.mu.Lock()
				defer g.mu.Unlock()
				if g.first == nil {
					g.first = &Panic{v, debug.Stack()}
				}
			}
		}()
		f()
	}()
}

// Wait waits for the group's goroutines, and panics with the first panic
// of theirs, if any.
func (g *Group) Wait() {
	g.wg.Wait()
	if g.first != nil {
		panic(*g.first)
	}
}

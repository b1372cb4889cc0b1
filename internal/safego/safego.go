// Package safego runs goroutines whose panics reach their caller: Go's
// runtime ends the process with exit status 2 on a panic that the goroutine
// raising it does not recover, and nothing else can recover it, so a bug
// in a trial's goroutine read to scripts as their own usage error.
package safego

import (
	"fmt"
	"runtime/debug"
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

package safego

import (
	"strings"
	"testing"
)

func TestGoSendsThePanicWithItsTrace(t *testing.T) {
	panics := make(chan Panic)
	Go(panics, func() { crash() })
	p := <-panics
	if p.Value != "boom" || !strings.Contains(p.String(), "safego.crash") {
		t.Errorf("got %q; want the value boom and crash's frame in the trace", p)
	}
}

//go:noinline
func crash() { panic("boom") }

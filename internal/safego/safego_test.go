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

func TestGroupRaisesAPanicInWait(t *testing.T) {
	defer func() {
		if p, ok := recover().(Panic); !ok || p.Value != "boom" || !strings.Contains(p.String(), "safego.crash") {
			t.Errorf("recovered %v; want the value boom and crash's frame in the trace", p)
		}
	}()
	var g Group
	for i := range 3 {
		g.Go(func() {
			if i == 1 {
				crash()
			}
		})
	}
	g.Wait()
	t.Error("Wait returned")
}

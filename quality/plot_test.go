package quality

import (
	"slices"
	"testing"
)

// TestPlotTellsEveryStrategyApart: every strategy bench search can compare
// has a colour of its own; with seven for twelve, the README's eleven
// strategies drew four pairs of lines alike (tpe-gp as sparse).
func TestPlotTellsEveryStrategyApart(t *testing.T) {
	if len(colors) < len(Strategies) {
		t.Errorf("%d colours for %d strategies", len(colors), len(Strategies))
	}
	for i, c := range colors {
		if slices.Contains(colors[:i], c) {
			t.Errorf("colour %d, %v, twice", i, c)
		}
	}
}

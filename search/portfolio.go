package search

import "github.com/nccltune/nccltune/space"

// portfolio takes turns between samplers: trial n is the proposal of member
// n mod k, as that member's own trial n/k, and every member is told every
// trial, so each models all that was measured. TPE with local moves holds
// the named scenarios (a good setting found, refined one value at a time)
// and the Gaussian process the generated landscapes (settings that pay
// only together); taking turns keeps most of both (see the README).
type portfolio []Sampler

func (p portfolio) Ask(n int) (space.Assignment, error) {
	return p[n%len(p)].Ask(n / len(p))
}

func (p portfolio) Tell(a space.Assignment, scores []float64) error {
	for _, s := range p {
		if err := s.Tell(a, scores); err != nil {
			return err
		}
	}
	return nil
}

// Focus passes the ranges to propose for on to the members that take them.
func (p portfolio) Focus(ranges []bool) {
	for _, s := range p {
		if f, ok := s.(interface{ Focus([]bool) }); ok {
			f.Focus(ranges)
		}
	}
}

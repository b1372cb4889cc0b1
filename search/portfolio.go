package search

import "github.com/nccltune/nccltune/space"

// portfolio takes turns between samplers: owner(n) says which member
// proposes trial n, as that member's own next trial (0, 1, ...), and every
// member is told every trial, so each models all that was measured.
type portfolio struct {
	members []Sampler
	owner   func(n int) int
}

func (p portfolio) Ask(n int) (space.Assignment, error) {
	m, k := p.owner(n), 0
	for i := range n {
		if p.owner(i) == m {
			k++
		}
	}
	return p.members[m].Ask(k)
}

func (p portfolio) Tell(a space.Assignment, scores []float64) error {
	for _, s := range p.members {
		if err := s.Tell(a, scores); err != nil {
			return err
		}
	}
	return nil
}

// Focus passes the ranges to propose for on to the members that take them.
func (p portfolio) Focus(ranges []bool) {
	for _, s := range p.members {
		if f, ok := s.(interface{ Focus([]bool) }); ok {
			f.Focus(ranges)
		}
	}
}

// tpeGPEarly is how many of the first trials the Gaussian process proposes alone.
const tpeGPEarly = 40

// tpeGPTurn is the member of tpe-gp, TPE (0) or the Gaussian process (1),
// that proposes trial n: the Gaussian process up to trial tpeGPEarly, when
// its model of pairs finds what TPE's model of single settings cannot,
// then TPE and the process in turn, when TPE's local moves polish what
// was found one setting at a time (measured, README: with the process's
// covering start-up, TPE's turns before trial 40 cost the generated
// landscapes more than they bought the named scenarios; after it they buy
// TCP's last percent). A campaign of 40 trials or fewer is the process's alone.
func tpeGPTurn(n int) int {
	if n < tpeGPEarly {
		return 1
	}
	return n % 2
}

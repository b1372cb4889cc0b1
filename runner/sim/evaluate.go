package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrWrongResults is what Evaluate returns where the run would print #wrong > 0.
var ErrWrongResults = errors.New("results would be wrong (LL128 forced where it is not safe)")

// Evaluate returns the bus bandwidth (GB/s) the scenario's true model gives
// each size for the collective under env, without noise: the ground truth for
// search-quality benchmarks. An error is what NCCL (or the check) would report.
func Evaluate(sc Scenario, coll string, env map[string]string, sizes []int64) ([]float64, error) {
	times, err := Times(sc, coll, env, sizes)
	if err != nil {
		return nil, err
	}
	n := float64(sc.ranks())
	out := make([]float64, len(sizes))
	for i, t := range times {
		out[i] = float64(sizes[i]) / t / 1e3 * math.Max(collectives[coll].busFactor(n), 0)
	}
	return out, nil
}

// Times returns the time (microseconds) of one operation of each size that
// the scenario's true model gives the collective under env, without noise.
func Times(sc Scenario, coll string, env map[string]string, sizes []int64) ([]float64, error) {
	if err := sc.validate(); err != nil {
		return nil, err
	}
	if _, ok := collectives[coll]; !ok {
		return nil, fmt.Errorf("unknown collective %q", coll)
	}
	cfg, err := sc.parseConfig(env, coll)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(sizes))
	if sc.Landscape > 0 {
		return sc.landscapeTimes(coll, env, cfg, sizes, out)
	}
	for i, size := range sizes {
		algo, proto, ok := sc.choose(coll, float64(size), cfg)
		if !ok {
			return nil, fmt.Errorf("no algorithm/protocol available")
		}
		if proto == protoLL128 && cfg.ll128Corrupts && size >= 64<<10 {
			return nil, ErrWrongResults
		}
		out[i] = sc.predict(coll, float64(size), algo, proto, cfg, sc.truth())
	}
	return out, nil
}

// ParseScenario reads scenario flags, as the tuner passes them, into a Scenario.
func ParseScenario(args []string) (Scenario, error) {
	sc, fs := scenarioFlags(nil)
	if err := fs.Parse(args); err != nil {
		return Scenario{}, err
	}
	return *sc, sc.validate()
}

// landscapeTimes is Times on the scenario's landscape: the failures NCCL
// would report, then each size's time. The physics' choice of algorithm and
// protocol matters only where it may fail (nothing allowed, or forced LL128
// over sockets), so it is made only then.
func (s Scenario) landscapeTimes(coll string, env map[string]string, cfg config, sizes []int64, out []float64) ([]float64, error) {
	gain, err := s.generated().under(env)
	if err != nil {
		return nil, err
	}
	b := s.baseTable(coll)
	if _, _, ok := s.choose(coll, 1<<20, cfg); !ok {
		return nil, fmt.Errorf("no algorithm/protocol available")
	}
	for i, size := range sizes {
		if cfg.ll128Corrupts && size >= 64<<10 {
			if _, proto, _ := s.choose(coll, float64(size), cfg); proto == protoLL128 {
				return nil, ErrWrongResults
			}
		}
		out[i] = s.landscapeTime(gain, b, coll, float64(size))
	}
	return out, nil
}

// TruthKey is a key under which Times may be memoised: two environments
// with the same non-empty key get the same times, or the same error, from
// Times on this scenario for this collective. On a generated landscape that
// is their levels and what NCCL makes of NCCL_ALGO and NCCL_PROTO; it is ""
// (no key) without a landscape, where every value counts, and wherever the
// physics' choice of protocol still matters.
func TruthKey(sc Scenario, coll string, env map[string]string) string {
	if sc.Landscape <= 0 {
		return ""
	}
	if _, ok := collectives[coll]; !ok {
		return ""
	}
	cfg, err := sc.parseConfig(env, coll)
	if err != nil || cfg.ll128Corrupts {
		return ""
	}
	key := []byte(sc.generated().key(env))
	for _, allowed := range append(slices.Clone(cfg.algos), cfg.protos...) {
		if allowed {
			key = append(key, '+')
		} else {
			key = append(key, '-')
		}
	}
	return string(key)
}

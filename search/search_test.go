package search

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nccltune/nccltune/space"
)

const testSpace = `
[campaign]
sizes = { min = "8", max = "1M", factor = 2 }
[[range]]
name = "small"
min = "8"
max = "4K"
[[range]]
name = "large"
min = "4K"
max = "2M"
[benchmark]
binary = "all_reduce_perf"
[fixed]
NCCL_NET = "IB"
[[param]]
name = "NCCL_ALGO"
values = ["default", "Ring", "Tree"]
[[param]]
name = "NCCL_PROTO"
values = ["default", "LL", "LL128", "Simple"]
[[param]]
name = "NCCL_MIN_CTAS"
min = 1
max = 32
log = true
[[param]]
name = "NCCL_IB_QPS_PER_CONNECTION"
min = 1
max = 8
when = { NCCL_ALGO = "Ring" }
`

func loadSpace(t testing.TB) *space.Space {
	sp, err := space.Parse("test.toml", []byte(testSpace))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// objective has a different optimum per range: small wants Tree/LL, large Ring/Simple with 16 channels.
func objective(a space.Assignment) []float64 {
	ch, _ := strconv.Atoi(a["NCCL_MIN_CTAS"])
	small, large := 1.0, 1.0
	if a["NCCL_ALGO"] == "Tree" {
		small += 2
	}
	if a["NCCL_PROTO"] == "LL" {
		small += 2
	}
	if a["NCCL_ALGO"] == "Ring" {
		large += 2
	}
	if a["NCCL_PROTO"] == "Simple" {
		large += 2
	}
	large += 3 * math.Exp(-math.Pow(math.Log2(float64(ch))-4, 2))
	return []float64{small, large}
}

// runSearch runs a campaign of sampler name on the test space, scored by
// obj, and returns each range's best score.
func runSearch(t *testing.T, name string, seed int64, trials int, obj func(space.Assignment) []float64) (best []float64) {
	return runSearchIn(t, loadSpace(t), name, seed, trials, obj)
}

// runSearchIn is runSearch on space sp.
func runSearchIn(t *testing.T, sp *space.Space, name string, seed int64, trials int, obj func(space.Assignment) []float64) (best []float64) {
	s, err := New(name, sp, seed)
	if err != nil {
		t.Fatal(err)
	}
	best = make([]float64, len(sp.Ranges))
	for n := range trials {
		a, err := s.Ask(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range sp.Params {
			// An active integer may be left out: NCCL's default, as in trial 0.
			if _, has := a[p.Name]; has != sp.Active(p, a) && (has || p.Categorical()) {
				t.Fatalf("trial %d: %s present=%v but active=%v in %v", n, p.Name, has, sp.Active(p, a), a)
			}
		}
		sc := obj(a) // nil: the configuration fails
		for i := range sc {
			best[i] = max(best[i], sc[i])
		}
		if err := s.Tell(a, sc); err != nil {
			t.Fatal(err)
		}
	}
	return best
}

// TestModelsBeatRandom compares the mean best score over seeds of the
// samplers that model the scores (TPE, the Gaussian process, the sparse
// regression) with random
// search's. Proposals are reproducible, so this is deterministic; it fails
// if a model stops learning from Tell.
func TestModelsBeatRandom(t *testing.T) {
	for _, name := range []string{"tpe", "gp", "sparse"} {
		var modelSum, randomSum float64
		for seed := range int64(8) {
			mb, rb := runSearch(t, name, seed, 30, objective), runSearch(t, "random", seed, 30, objective)
			modelSum += mb[0] + mb[1]
			randomSum += rb[0] + rb[1]
		}
		if modelSum <= randomSum*1.03 {
			t.Errorf("mean best score: %s %.3f, random %.3f", name, modelSum/8, randomSum/8)
		}
	}
}

func TestAskIsReproducible(t *testing.T) {
	for _, name := range space.Samplers {
		sp := loadSpace(t)
		a1, a2 := mustNew(t, name, sp), mustNew(t, name, sp)
		// Same history told to both, one of them asked extra times in between:
		// proposal n must not depend on how many asks came before.
		for n := range 25 {
			if n%3 == 0 {
				a2.Ask(1000 + n)
			}
			p1, _ := a1.Ask(n)
			p2, _ := a2.Ask(n)
			if !reflect.DeepEqual(p1, p2) {
				t.Fatalf("%s: trial %d proposals differ: %v vs %v", name, n, p1, p2)
			}
			a1.Tell(p1, objective(p1))
			a2.Tell(p2, objective(p2))
		}
	}
}

func mustNew(t *testing.T, name string, sp *space.Space) Sampler {
	s, err := New(name, sp, 42)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTellRejectsValuesOutsideTheSpace(t *testing.T) {
	s := mustNew(t, "tpe", loadSpace(t))
	for _, a := range []space.Assignment{{"NCCL_ALGO": "NVLS"}, {"NCCL_MIN_CTAS": "64"}, {"NCCL_MIN_CTAS": "x"}} {
		if err := s.Tell(a, []float64{1, 1}); err == nil {
			t.Errorf("Tell(%v) accepted", a)
		}
	}
	if err := s.Tell(space.Assignment{"NCCL_ALGO": "Ring"}, nil); err != nil {
		t.Errorf("a failed trial: %v", err)
	}
	if _, err := New("annealing", loadSpace(t), 1); err == nil {
		t.Error("unknown sampler accepted")
	}
}

func TestEnumerate(t *testing.T) {
	sp := loadSpace(t)
	all, _ := Enumerate(sp, 0, 1<<20)
	// ALGO 3 x PROTO 4 x MIN_CTAS 32, and QPS 8 more where ALGO is Ring.
	if want := 2*4*32 + 1*4*32*8; len(all) != want {
		t.Errorf("%d assignments, want %d", len(all), want)
	}
	grid, _ := Enumerate(sp, 4, 1<<20)
	if want := 2*4*4 + 4*4*4; len(grid) != want {
		t.Errorf("grid of %d, want %d", len(grid), want)
	}
	seen := map[string]bool{}
	g, err := newGrid(sp, 3)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(grid) {
		a, _ := g.Ask(n)
		seen[fmt.Sprint(a)] = true
	}
	if len(seen) != len(grid) {
		t.Errorf("the grid visited %d of %d points in one pass", len(seen), len(grid))
	}
}

// TestGridPassesOverToldPoints: points told before the grid's turn (NCCL's
// defaults, the warm start's) are not run again, nor is any point twice;
// the grid's trial numbers start past them, and once every point was
// told, it is exhausted.
func TestGridPassesOverToldPoints(t *testing.T) {
	sp := loadSpace(t)
	grid, _ := Enumerate(sp, 4, 1<<20)
	g, err := newGrid(sp, 3)
	if err != nil {
		t.Fatal(err)
	}
	before := grid[:3]
	told := map[string]bool{}
	for _, a := range before {
		g.Tell(a, nil)
		told[sp.Key(a)] = true
	}
	for n := len(before); n < len(grid); n++ {
		a, _ := g.Ask(n)
		if told[sp.Key(a)] {
			t.Fatalf("trial %d: %v again, with %d of %d points told", n, a, len(told), len(grid))
		}
		g.Tell(a, nil)
		told[sp.Key(a)] = true
	}
	if a, err := g.Ask(len(grid)); !errors.Is(err, ErrExhausted) {
		t.Errorf("once every point was told: %v, %v; want ErrExhausted", a, err)
	}
}

// TestHugeGridIsRefused: twenty parameters of four values each are 4^20
// points; the grid is refused at once rather than listed until memory runs out.
func TestHugeGridIsRefused(t *testing.T) {
	var src strings.Builder
	src.WriteString("[benchmark]\nbinary = \"x\"\n")
	four := "min = 1\nmax = 7" // an integer range: four grid points
	for _, p := range [][2]string{
		{"NCCL_MIN_CTAS", four}, {"NCCL_MAX_CTAS", four}, {"NCCL_NCHANNELS_PER_NET_PEER", four}, {"NCCL_MIN_P2P_NCHANNELS", four},
		{"NCCL_MAX_P2P_NCHANNELS", four}, {"NCCL_IB_QPS_PER_CONNECTION", four}, {"NCCL_IB_TIMEOUT", four}, {"NCCL_IB_RETRY_CNT", four},
		{"NCCL_IB_SL", four}, {"NCCL_IB_TC", four}, {"NCCL_SOCKET_NTHREADS", four}, {"NCCL_NSOCKS_PERTHREAD", four}, {"NCCL_IB_GID_INDEX", four},
		{"NCCL_BUFFSIZE", `values = ["1M", "2M", "4M", "8M"]`}, {"NCCL_P2P_NET_CHUNKSIZE", `values = ["64K", "128K", "256K", "512K"]`},
		{"NCCL_P2P_NVL_CHUNKSIZE", `values = ["64K", "128K", "256K", "512K"]`}, {"NCCL_P2P_PCI_CHUNKSIZE", `values = ["64K", "128K", "256K", "512K"]`},
		{"NCCL_ALGO", `values = ["default", "Ring", "Tree", "PAT"]`}, {"NCCL_PROTO", `values = ["default", "LL", "LL128", "Simple"]`},
		{"NCCL_NTHREADS", `values = ["64", "128", "256", "512"]`},
	} {
		fmt.Fprintf(&src, "[[param]]\nname = %q\n%s\n", p[0], p[1])
	}
	sp, err := space.Parse("huge.toml", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := New("grid", sp, 1); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a grid of 4^20 points: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %s", d)
	}
}

// TestFocusSkipsSettledRanges: TPE proposes for each focused range in turn,
// and for every range when none is focused.
func TestFocusSkipsSettledRanges(t *testing.T) {
	sp, err := space.Parse("t.toml", []byte(testSpace))
	if err != nil {
		t.Fatal(err)
	}
	s, err := newTPE(sp, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		focus []bool
		want  []int // ranges of trials 0..3
	}{
		{nil, []int{0, 1, 0, 1}},
		{[]bool{false, true}, []int{1, 1, 1, 1}},
		{[]bool{true, false}, []int{0, 0, 0, 0}},
		{[]bool{false, false}, []int{0, 1, 0, 1}},
	} {
		s.Focus(tc.focus)
		for n, want := range tc.want {
			if got, _ := s.rangeFor(n); got != want {
				t.Errorf("focus %v: trial %d proposes for range %d, want %d", tc.focus, n, got, want)
			}
		}
	}
}

// TestCoordinateDescent: from NCCL's defaults, one parameter at a time, the
// baseline reaches each range's optimum of a separable objective, every
// proposal of its descent one setting away from the point it descends from.
func TestCoordinateDescent(t *testing.T) {
	sp := loadSpace(t)
	s := mustNew(t, "coordinate", sp)
	best := make([]float64, 2)
	var told []space.Assignment
	for n := range 40 {
		a, err := s.Ask(n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && !reflect.DeepEqual(a, space.Assignment{"NCCL_ALGO": "default", "NCCL_PROTO": "default"}) {
			t.Fatalf("first proposal %v, want NCCL's defaults", a)
		}
		if n > 0 && n < 10 && !slices.ContainsFunc(told, func(b space.Assignment) bool { return differences(sp, a, b) == 1 }) {
			t.Errorf("trial %d: %v is not one setting away from any point told", n, a)
		}
		sc := objective(a)
		for i := range best {
			best[i] = max(best[i], sc[i])
		}
		s.Tell(a, sc)
		told = append(told, a)
	}
	if best[0] != 5 || best[1] < 7.5 {
		t.Errorf("best scores %v, want 5 and >= 7.5", best)
	}
}

// differences counts the parameters a and b set differently.
func differences(sp *space.Space, a, b space.Assignment) int {
	n := 0
	for _, p := range sp.Params {
		if a[p.Name] != b[p.Name] {
			n++
		}
	}
	return n
}

// TestMultivariateKeepsPairsTogether: where two pairs of settings pay (Tree
// with LL128, Ring with Simple) and nothing else does, the joint density
// draws each pair again together; TPE modelling each setting on its own
// finds all four settings good and mixes them into pairs that do not pay.
func TestMultivariateKeepsPairsTogether(t *testing.T) {
	sp := loadSpace(t)
	paying := func(a space.Assignment) bool {
		return a["NCCL_ALGO"] == "Tree" && a["NCCL_PROTO"] == "LL128" || a["NCCL_ALGO"] == "Ring" && a["NCCL_PROTO"] == "Simple"
	}
	mixed := map[string]int{}
	for _, name := range []string{"tpe", "tpe-independent"} {
		s := mustNew(t, name, sp)
		algos, protos := []string{"default", "Ring", "Tree"}, []string{"default", "LL", "LL128", "Simple"}
		for i := range 60 {
			a := space.Assignment{"NCCL_ALGO": algos[i%3], "NCCL_PROTO": protos[i%4], "NCCL_MIN_CTAS": strconv.Itoa(1 + i%32)}
			switch i % 6 {
			case 0:
				a["NCCL_ALGO"], a["NCCL_PROTO"] = "Tree", "LL128"
			case 3:
				a["NCCL_ALGO"], a["NCCL_PROTO"] = "Ring", "Simple"
			}
			if a["NCCL_ALGO"] == "Ring" {
				a["NCCL_IB_QPS_PER_CONNECTION"] = "1"
			}
			score := 1.0
			if paying(a) {
				score = 10
			}
			if err := s.Tell(a, []float64{score, score}); err != nil {
				t.Fatal(err)
			}
		}
		for n := 66; n < 706; n += 8 { // the multivariate model's turns (see tpeSampler): turn n/2 of range 0, 1 mod 4
			a, err := s.Ask(n)
			if err != nil {
				t.Fatal(err)
			}
			if !paying(a) && (a["NCCL_ALGO"] == "Tree" || a["NCCL_ALGO"] == "Ring") && (a["NCCL_PROTO"] == "LL128" || a["NCCL_PROTO"] == "Simple") {
				mixed[name]++
			}
		}
	}
	if mixed["tpe"]*2 > mixed["tpe-independent"] || mixed["tpe-independent"] < 16 {
		t.Errorf("of 80 proposals, multivariate TPE mixed the pairs in %d, independent TPE in %d", mixed["tpe"], mixed["tpe-independent"])
	}
}

// TestMultivariateNeverLearnsFromFailures: a failed trial is no good one,
// however few trials completed; proposals do not gather where trials failed.
func TestMultivariateNeverLearnsFromFailures(t *testing.T) {
	sp := loadSpace(t)
	s := mustNew(t, "tpe", sp)
	s.Tell(space.Assignment{"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_MIN_CTAS": "2"}, []float64{5, 5})
	for i := range 18 {
		s.Tell(space.Assignment{"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_MIN_CTAS": strconv.Itoa(1 + i), "NCCL_IB_QPS_PER_CONNECTION": "1"}, nil)
	}
	failed := 0
	for n := 66; n < 706; n += 8 { // the multivariate model's turns, as above
		a, _ := s.Ask(n)
		if a["NCCL_ALGO"] == "Ring" && a["NCCL_PROTO"] == "Simple" {
			failed++
		}
	}
	if failed > 20 {
		t.Errorf("%d of 80 proposals repeat the failed settings", failed)
	}
}

// TestCoordinateDrawsUntriedAfterConverging: once the descent has converged,
// its random draws skip what was tried.
func TestCoordinateDrawsUntriedAfterConverging(t *testing.T) {
	if n := repeats(t, "coordinate", 200); n > 2 {
		t.Errorf("%d of 200 proposals repeated a configuration tried before", n)
	}
}

// repeats is how many of a campaign's proposals on the test space repeat
// a configuration tried before.
func repeats(t *testing.T, name string, trials int) int {
	sp := loadSpace(t)
	s := mustNew(t, name, sp)
	seen := map[string]bool{}
	n := 0
	for i := range trials {
		a, _ := s.Ask(i)
		if seen[sp.Key(a)] {
			n++
		}
		seen[sp.Key(a)] = true
		s.Tell(a, objective(a))
	}
	return n
}

// BenchmarkAskAt500 is one proposal of each sampler after 500 trials told:
// its share of a trial's cost.
func BenchmarkAskAt500(b *testing.B) {
	sp := loadSpace(b)
	for _, name := range space.Samplers {
		b.Run(name, func(b *testing.B) {
			s, err := New(name, sp, 1)
			if err != nil {
				b.Fatal(err)
			}
			for n := range 500 {
				a, _ := s.Ask(n)
				s.Tell(a, objective(a))
			}
			b.ResetTimer()
			for n := range b.N {
				s.Ask(500 + n)
			}
		})
	}
}

// pairObjective hides in each range a pair of settings that gains 30%
// together and costs 4% each alone, beside a decoy that gains 20% alone.
func pairObjective(a space.Assignment) []float64 {
	ch, _ := strconv.Atoi(a["NCCL_MIN_CTAS"])
	small, large := 1.0, 1.0
	protoLL128, manyCTAs := a["NCCL_PROTO"] == "LL128", ch >= 12
	switch {
	case protoLL128 && manyCTAs:
		small *= 1.3
	case protoLL128 || manyCTAs:
		small *= 0.96
	}
	if a["NCCL_ALGO"] == "Tree" {
		small *= 1.2 // the decoy
	}
	tree, simple := a["NCCL_ALGO"] == "Tree", a["NCCL_PROTO"] == "Simple"
	switch {
	case tree && simple:
		large *= 1.3
	case tree || simple:
		large *= 0.96
	}
	if a["NCCL_PROTO"] == "LL" {
		large *= 1.2
	}
	return []float64{small, large}
}

// TestModelsFindPairsThatOnlyPayTogether: the Gaussian process and the
// sparse regression find, in most campaigns, each range's pair of settings
// that only pays together, past a decoy that pays alone, within 30 trials
// (the Gaussian process in 10 of these 10, 6 before it weighed each
// setting on its own and 3 before it counted improvement from beyond its
// best and summed it over the ranges; the sparse regression in 8); the
// default, the Gaussian process and then it and TPE in turn, within 40
// (10 of 10, 8 before the weights; TPE alone in 5).
func TestModelsFindPairsThatOnlyPayTogether(t *testing.T) {
	for _, tc := range []struct {
		sampler         string
		trials, atLeast int
	}{{"gp", 30, 8}, {"sparse", 30, 6}, {"tpe-gp", 40, 8}} {
		found := 0
		for seed := range int64(10) {
			if best := runSearch(t, tc.sampler, seed, tc.trials, pairObjective); best[0] >= 1.3*0.999 && best[1] >= 1.3*0.999 {
				found++
			}
		}
		if found < tc.atLeast {
			t.Errorf("%s: both pairs found in %d of 10 campaigns of %d trials", tc.sampler, found, tc.trials)
		}
	}
}

// TestSparseAvoidsFailingPairs: NCCL_ALGO=Tree and NCCL_PROTO=LL each pay,
// and together they fail, as NCCL rejects some pairs. The sparse
// regression learns the failing pair from the failures instead of
// learning that each setting is slow, and so keeps proposing each setting
// without the other: after the random start, few proposals fail.
func TestSparseAvoidsFailingPairs(t *testing.T) {
	failures := 0
	obj := func(a space.Assignment) []float64 {
		tree, ll := a["NCCL_ALGO"] == "Tree", a["NCCL_PROTO"] == "LL"
		if tree && ll {
			failures++
			return nil
		}
		s := 1.0
		if tree {
			s *= 1.3
		}
		if ll {
			s *= 1.3
		}
		return []float64{s, s}
	}
	for seed := range int64(5) {
		best := runSearch(t, "sparse", seed, 40, obj)
		if best[0] < 1.3*0.999 {
			t.Errorf("seed %d: best %.3f, want Tree or LL found (1.3)", seed, best[0])
		}
	}
	if failures > 20 {
		t.Errorf("%d of 200 proposals failed", failures)
	}
}

// TestModelsTryValuesBetweenTheirGrids: the sparse model tells an
// integer's values apart only by the cell of its five-point grid they fall
// in (of NCCL_MIN_CTAS 1-32: 1, 2, 6, 13, 32), so its proposals draw within
// a cell; the Gaussian process's candidates take the grid's values and,
// around each range's best, the values next to it on a finer one. An
// optimum at 20 channels, between 13 and 32, is then found.
func TestModelsTryValuesBetweenTheirGrids(t *testing.T) {
	obj := func(a space.Assignment) []float64 {
		ch, _ := strconv.Atoi(a["NCCL_MIN_CTAS"])
		z := math.Log2(float64(ch)/20) / 0.25
		s := 1 + 3*math.Exp(-z*z/2)
		return []float64{s, s}
	}
	for _, name := range []string{"sparse", "gp"} {
		found := 0
		for seed := range int64(10) {
			if best := runSearch(t, name, seed, 40, obj); best[0] > 3.5 {
				found++
			}
		}
		if found < 8 {
			t.Errorf("%s: 18 to 22 channels found in %d of 10 campaigns, want 8", name, found)
		}
	}
}

func TestBeside(t *testing.T) {
	grid := []string{"1", "2", "4", "8"}
	for _, tc := range []struct {
		v    string
		want []string
	}{{"4", []string{"2", "8"}}, {"3", []string{"2", "4"}}, {"1", []string{"2"}}, {"8", []string{"4"}}, {"0", []string{"1"}}, {"9", []string{"8"}}} {
		if got := beside(grid, tc.v); !slices.Equal(got, tc.want) {
			t.Errorf("beside(%v, %s) = %v, want %v", grid, tc.v, got, tc.want)
		}
	}
}

// TestProposalsKeepConditionsOnIntegers: where a condition depends on an
// integer's value (here one that splits a cell of sparse's grid of
// NCCL_MIN_CTAS: 4-8), every sampler's proposals set exactly the
// parameters the condition leaves active (runSearch checks each proposal).
func TestProposalsKeepConditionsOnIntegers(t *testing.T) {
	sp, err := space.Parse("cond.toml", []byte(strings.Replace(testSpace, `name = "NCCL_IB_QPS_PER_CONNECTION"
min = 1
max = 8
when = { NCCL_ALGO = "Ring" }`, `name = "NCCL_IB_QPS_PER_CONNECTION"
min = 1
max = 8
when = { NCCL_MIN_CTAS = ["1", "2", "3", "4", "5"] }`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range space.Samplers {
		t.Run(name, func(t *testing.T) {
			for seed := range int64(3) {
				runSearchIn(t, sp, name, seed, 40, objective)
			}
		})
	}
}

// TestInfiniteScoresAreNotMeasured: a score that is infinite (a benchmark
// that printed one) counts as a range not measured, as NaN does, in every
// sampler's model: none takes it for the best or its log for a number.
func TestInfiniteScoresAreNotMeasured(t *testing.T) {
	sp := loadSpace(t)
	withScore := func(x float64) func(space.Assignment) []float64 {
		return func(a space.Assignment) []float64 {
			s := objective(a)
			if a["NCCL_PROTO"] == "LL128" {
				s[0] = x
			}
			return s
		}
	}
	for _, name := range []string{"coordinate", "gp", "sparse", "tpe", "tpe-gp"} {
		inf, nan := mustNew(t, name, sp), mustNew(t, name, sp)
		for n := range 24 {
			a, _ := inf.Ask(n)
			if b, _ := nan.Ask(n); !reflect.DeepEqual(a, b) {
				t.Fatalf("%s, trial %d: told +Inf it proposed %v, told NaN %v", name, n, a, b)
			}
			inf.Tell(a, withScore(math.Inf(1))(a))
			nan.Tell(a, withScore(math.NaN())(a))
		}
	}
}

// TestLocalMovesStartFromTheBestMeasured: a first trial that did not
// measure the range (NaN) is not the base TPE's local moves start from,
// whatever comes after it.
func TestLocalMovesStartFromTheBestMeasured(t *testing.T) {
	sp := loadSpace(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, first := range []float64{math.NaN(), math.Inf(1)} {
		h := history{sp: sp}
		var best space.Assignment
		for i, score := range []float64{first, 2, 5, 3} {
			a := draw(sp, rng)
			for h.tried(a) {
				a = draw(sp, rng)
			}
			if i == 2 {
				best = a
			}
			h.remember(a, slices.Repeat([]float64{score}, len(sp.Ranges)))
		}
		for range 20 {
			a, ok := h.localMove(sp, 0, rng)
			if !ok {
				t.Fatalf("first score %g: no local move", first)
			}
			changed := 0 // of the settings both hold: a condition may switch others on or off
			for _, p := range sp.Params {
				v, ok := a[p.Name]
				if w, held := best[p.Name]; ok && held && v != w {
					changed++
				}
			}
			if changed > 1 || maps.Equal(a, best) {
				t.Fatalf("first score %g: local move %v is not one step from the best measured %v", first, a, best)
			}
		}
	}
}

// TestUnmeasuredRangesLearnNothing: a trial that ran but left a range out
// (NaN there: the range had settled) is no observation of that range in
// TPE's study of it, nor in the Gaussian process's scores of it (NaN, which
// its model leaves out); a failed trial is one, the worst.
func TestUnmeasuredRangesLearnNothing(t *testing.T) {
	sp := loadSpace(t)
	s, err := newTPE(sp, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var measured, unmeasured, failed int
	for n := range 30 {
		a := draw(sp, rng)
		scores := objective(a)
		switch n % 3 {
		case 1:
			scores[1], unmeasured = math.NaN(), unmeasured+1
		case 2:
			scores, failed = nil, failed+1
		default:
			measured++
		}
		if err := s.Tell(a, scores); err != nil {
			t.Fatal(err)
		}
	}
	for r, want := range []int{measured + unmeasured + failed, measured + failed} {
		trials, err := s.studies[r].GetTrials()
		if err != nil {
			t.Fatal(err)
		}
		if len(trials) != want {
			t.Errorf("range %d's study holds %d trials, want %d", r, len(trials), want)
		}
	}
	ys, _ := logScores(s.told, 1)
	worst := math.Inf(1)
	for i, y := range ys {
		if i%3 == 0 {
			worst = math.Min(worst, y)
		}
	}
	for i, y := range ys {
		if math.IsNaN(y) != (i%3 == 1) || i%3 == 2 && !(y < worst) {
			t.Errorf("trial %d: range 1's log score %g (the worst measured %g)", i, y, worst)
		}
	}
}

func mustEncode(t *testing.T, sp *space.Space) *encoding {
	e, err := newEncoding(sp)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestNeighboursFeaturesWithoutBuildingThem: the sparse climb weighs a
// neighbour whose changed setting switches no other on or off, and is on
// itself, by setting that setting's unit features in its start's; those
// are the features of the neighbour built (withValue), in a space with a
// condition and in a wide one.
func TestNeighboursFeaturesWithoutBuildingThem(t *testing.T) {
	// NCCL_IB_QPS_PER_CONNECTION is searched only when NCCL_ALGO is Ring.
	if e := mustEncode(t, loadSpace(t)); !slices.Equal(e.gates, []bool{true, false, false, false}) {
		t.Fatalf("gates %v: only NCCL_ALGO switches a setting on or off", e.gates)
	}
	for _, sp := range []*space.Space{loadSpace(t), wideSpace(t)} {
		e := mustEncode(t, sp)
		rng := rand.New(rand.NewPCG(11, 12))
		cu, got, want := make([]float64, e.units), make([]float64, e.units), make([]float64, e.units)
		checked := 0
		for range 50 {
			cur := draw(sp, rng)
			e.unitsOf(cur, cu)
			for pi, p := range sp.Params {
				if e.gates[pi] || !sp.Active(p, cur) {
					continue
				}
				for _, v := range e.grids[pi] {
					copy(got, cu)
					e.set(got, pi, v)
					e.unitsOf(withValue(sp, cur, p.Name, v), want)
					if !slices.Equal(got, want) {
						t.Fatalf("%v with %s=%s: features %v, built %v", cur, p.Name, v, got, want)
					}
					checked++
				}
			}
		}
		if checked < 500 {
			t.Errorf("%d neighbours checked", checked)
		}
	}
}

// TestEnumerateStopsAtItsLimit: every integer of a range is listed only
// where the range fits the limit; NCCL_BUFFSIZE from 4K to 1G, a billion
// integers, was listed in full (tens of GiB) before the limit was checked.
func TestEnumerateStopsAtItsLimit(t *testing.T) {
	sp := hostileSpace(t, 1, param("NCCL_ALGO", `values = ["Ring", "Tree"]`)+
		param("NCCL_BUFFSIZE", "min = 4096\nmax = 1073741824\nwhen = { NCCL_ALGO = \"Tree\" }"))
	if all, ok := Enumerate(sp, 0, 1<<16); ok || len(all) > 1<<16+1 {
		t.Errorf("%d assignments, ok=%v; want false within the limit", len(all), ok)
	}
	if grid, ok := Enumerate(sp, gridPoints, 1<<16); !ok || len(grid) != 1+gridPoints {
		t.Errorf("grid of %d, ok=%v; want %d", len(grid), ok, 1+gridPoints)
	}
}

// TestTPEProposesUntried: once TPE's densities settle on a range's best, its
// draws are that configuration again and again; a proposal told already
// measures nothing new while untried ones remain, so it is a local move
// from the best instead.
func TestTPEProposesUntried(t *testing.T) {
	for _, name := range []string{"tpe", "tpe-independent"} {
		if n := repeats(t, name, 100); n > 2 {
			t.Errorf("%s: %d of 100 proposals repeated a configuration tried before", name, n)
		}
	}
}

// TestSamplersReadNCCLDefaultsAsUnset: NCCL takes 1 queue pair per
// connection and NCCL_CROSS_NIC 2 when the variables are unset, so a
// configuration setting them so runs as one leaving them out. The samplers
// took the two for different configurations: they ran both (in a campaign
// on a generated landscape, six of eighty were such repeats), and
// the Gaussian process's kernel saw nothing alike in them. A variable
// whose default NCCL chooses by the system (NCCL_SOCKET_NTHREADS) is not
// read so.
func TestSamplersReadNCCLDefaultsAsUnset(t *testing.T) {
	sp := hostileSpace(t, 1, param("NCCL_IB_QPS_PER_CONNECTION", "min = 1\nmax = 8")+
		param("NCCL_CROSS_NIC", `values = ["default", "1", "2"]`)+param("NCCL_SOCKET_NTHREADS", "min = 1\nmax = 4"))
	g := newGP(sp, 1)
	told := space.Assignment{"NCCL_CROSS_NIC": "default", "NCCL_SOCKET_NTHREADS": "2"} // QPs unset
	if err := g.Tell(told, []float64{1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a     space.Assignment
		tried bool
	}{
		{space.Assignment{"NCCL_CROSS_NIC": "default", "NCCL_SOCKET_NTHREADS": "2", "NCCL_IB_QPS_PER_CONNECTION": "1"}, true},
		{space.Assignment{"NCCL_CROSS_NIC": "2", "NCCL_SOCKET_NTHREADS": "2", "NCCL_IB_QPS_PER_CONNECTION": "1"}, true},
		{space.Assignment{"NCCL_CROSS_NIC": "2", "NCCL_SOCKET_NTHREADS": "2", "NCCL_IB_QPS_PER_CONNECTION": "2"}, false},
		{space.Assignment{"NCCL_CROSS_NIC": "1", "NCCL_SOCKET_NTHREADS": "2"}, false},
		{space.Assignment{"NCCL_CROSS_NIC": "default"}, false}, // NCCL chooses the socket threads
	} {
		if got := g.tried(tc.a); got != tc.tried {
			t.Errorf("%v tried: %v, want %v", tc.a, got, tc.tried)
		}
		if p, q := g.point(told), g.point(tc.a); tc.tried && !slices.EqualFunc(p, q, same) {
			t.Errorf("%v is %v to the Gaussian process, %v told is %v", tc.a, q, told, p)
		}
	}
}

// TestSamplersReadPowersOfTwoAsNCCLDoes: NCCL rounds NCCL_MIN_P2P_NCHANNELS
// up to a power of two, so 3 runs as 4, which results pool as one
// configuration (space.Reading); the samplers took them for two, ran both,
// and the Gaussian process put them apart on the axis. They read the value
// as NCCL does.
func TestSamplersReadPowersOfTwoAsNCCLDoes(t *testing.T) {
	sp := hostileSpace(t, 1, param("NCCL_MIN_P2P_NCHANNELS", "min = 1\nmax = 16"))
	g := newGP(sp, 1)
	told := space.Assignment{"NCCL_MIN_P2P_NCHANNELS": "4"}
	if err := g.Tell(told, []float64{1}); err != nil {
		t.Fatal(err)
	}
	for v, alike := range map[string]bool{"3": true, "4": true, "5": false, "2": false} {
		a := space.Assignment{"NCCL_MIN_P2P_NCHANNELS": v}
		if got := g.tried(a); got != alike {
			t.Errorf("%s tried after 4: %v, want %v", v, got, alike)
		}
		if p, q := g.point(told), g.point(a); alike != slices.EqualFunc(p, q, same) {
			t.Errorf("%s is %v to the Gaussian process, 4 is %v", v, q, p)
		}
	}
}

// TestBaselinesReadAlikeSpellingsAsOne: the grid and coordinate descent
// told configurations apart by key, so NCCL_IB_QPS_PER_CONNECTION "default"
// and 1 (NCCL's default), or NCCL_MIN_P2P_NCHANNELS 3 and 4 (NCCL rounds up),
// were two configurations to them: they ran both, a trial that measured
// nothing new. Until every configuration as NCCL reads it was told, neither
// proposes one told already.
func TestBaselinesReadAlikeSpellingsAsOne(t *testing.T) {
	sp := hostileSpace(t, 1, param("NCCL_IB_QPS_PER_CONNECTION", `values = ["default", "1", "4"]`)+
		param("NCCL_MIN_P2P_NCHANNELS", "min = 3\nmax = 4"))
	const readings = 2 // {1, 4} queue pairs x 4 channels
	for i := range 10 {
		name := []string{"grid", "coordinate"}[i%2]
		s, err := New(name, sp, int64(i))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for n := range readings {
			a, err := s.Ask(n)
			if err != nil {
				t.Fatal(err)
			}
			if k := sp.Reading(a); seen[k] {
				t.Errorf("%s, seed %d: trial %d, %v, runs as one told before", name, i, n, a)
			} else {
				seen[k] = true
			}
			if err := s.Tell(a, []float64{float64(1 + n)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

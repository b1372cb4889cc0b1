package tuner

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// BenchmarkTrialOverhead measures what the tuner itself spends per trial,
// everything but the benchmark process: planning the trial (the warm start's
// bookkeeping, settled ranges, then the default sampler's proposal over a
// 500-trial history: TPE's, or every second the Gaussian process's),
// parsing a real 2-node nccl-tests output, scoring, the two store writes,
// telling the sampler, and preparing the next command (iteration count, sweep).
// A typical trial runs for 10 s or more; this must stay far below 1% of that (100 ms).
func BenchmarkTrialOverhead(b *testing.B) {
	output, err := os.ReadFile("../runner/nccltests/testdata/v2.18.3-2x8-ompi-warnings.txt")
	if err != nil {
		b.Fatal(err)
	}
	sp := loadExample(b, 600)
	sp.Campaign.Patience = 50
	st, err := store.Open(b.TempDir() + "/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.LockWriter(); err != nil {
		b.Fatal(err)
	}
	camp, err := st.CreateCampaign(store.Campaign{Name: "bench", SpaceHash: sp.Hash(), Space: sp.Source, Budget: 1 << 20, Sampler: sp.Campaign.Sampler})
	if err != nil {
		b.Fatal(err)
	}
	sampler, err := search.New(sp.Campaign.Sampler, sp, 1)
	if err != nil {
		b.Fatal(err)
	}
	s := &session{Tuner: &Tuner{Space: sp, Store: st}, camp: camp, sampler: sampler, best: make([]float64, len(sp.Ranges))}
	// The recorded output is a 16-rank sweep of 1K..8G.
	bench := runner.NCCLTests{Binary: "all_reduce_perf", Collective: "all_reduce", GPUs: 1, Check: true}
	recorded := runner.Plan{Sizes: space.Sizes{Min: 1 << 10, Max: 8 << 30, Factor: 2}, Iters: 20}
	trial := func(n int) {
		s.settled = Settled(sp, s.trials)
		a, err := s.next(n)
		if err != nil {
			b.Fatal(err)
		}
		t := &store.Trial{CampaignID: camp.ID, Number: n, Params: a, Env: sp.Env(a)}
		if err := st.StartTrial(t); err != nil {
			b.Fatal(err)
		}
		res := runner.Result{Output: output, Started: time.Now(), Command: []string{"all_reduce_perf"}, Log: nccllog.Parse(output)}
		res.Measurement, res.Failure = bench.Read(recorded, runner.Output{Text: output, Log: res.Log})
		s.record(t, res, fullSweep(sp).ranges)
		if t.State != store.Complete {
			b.Fatalf("trial %d: %s", n, t.FailureReason)
		}
		if err := st.FinishTrial(context.Background(), t); err != nil {
			b.Fatal(err)
		}
		s.trials = append(s.trials, *t)
		// Scored as if it fitted the space, varied so that the models have something to learn.
		if err := sampler.Tell(a, []float64{1 + float64(n%7), 100 + float64(n%13), 200 + float64(n%11)}); err != nil {
			b.Fatal(err)
		}
		s.prepare(searchSweep(sp, Settled(sp, s.trials)))
	}
	for n := range 500 {
		trial(n)
	}
	b.ResetTimer()
	for i := range b.N {
		trial(500 + i)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(10*time.Second)*100, "%of10s-trial")
}

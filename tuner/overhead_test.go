package tuner

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/search"
	"github.com/nccltune/nccltune/store"
)

// BenchmarkTrialOverhead measures what the tuner itself spends per trial,
// everything but the benchmark process: planning the trial (the warm start's
// bookkeeping, settled ranges, then TPE's proposal over a 500-trial history),
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
	camp, err := st.CreateCampaign(store.Campaign{Name: "bench", SpaceHash: sp.Hash(), Space: sp.Source, Budget: 1 << 20, Sampler: "tpe"})
	if err != nil {
		b.Fatal(err)
	}
	c := &Campaign{Space: sp, Store: st}
	ses, err := c.launchable()
	if err != nil {
		b.Fatal(err)
	}
	sampler, _ := search.New("tpe", sp, 1)
	var trials []store.Trial
	trial := func(n int) {
		settled := Settled(sp, trials)
		a, err := c.next(n, sampler, trials, settled)
		if err != nil {
			b.Fatal(err)
		}
		t := &store.Trial{CampaignID: camp.ID, Number: n, Params: a, Env: sp.Env(a)}
		if err := st.StartTrial(t); err != nil {
			b.Fatal(err)
		}
		c.record(t, parsed(output), fullSweep(sp))
		if err := st.FinishTrial(context.Background(), t); err != nil {
			b.Fatal(err)
		}
		trials = append(trials, *t)
		// The recorded output sweeps 1K..8G; score it as if it fitted the space.
		if err := sampler.Tell(a, []float64{1 + float64(n%7), 100 + float64(n%13), 200 + float64(n%11)}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.prepare(ses, trials, searchSweep(sp, Settled(sp, trials))); err != nil {
			b.Fatal(err)
		}
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

// parsed is what the runner returns for a benchmark that printed output.
func parsed(output []byte) runner.Result {
	res := runner.Result{Output: output, Started: time.Now(), Command: []string{"all_reduce_perf"}}
	res.Report, _ = nccltests.Parse(bytes.NewReader(output))
	return res
}

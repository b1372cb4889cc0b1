package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/results"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

const reportSpace = "[campaign]\nsizes = { min = \"1K\", max = \"1M\", factor = 4 }\n[benchmark]\nbinary = \"x\"\n" +
	"[[param]]\nname = \"NCCL_ALGO\"\nvalues = [\"Ring\", \"Tree\"]\n[[param]]\nname = \"NCCL_PROTO\"\nvalues = [\"LL\", \"Simple\"]\n"

// reportTrials are n completed trials in which NCCL_PROTO=LL halves every
// range's score, their output with NCCL's INFO lines confirming every variable set
// where logged, without any where not (NCCL_DEBUG_FILE, gloo).
func reportTrials(sp *space.Space, n int, logged bool) []store.Trial {
	var trials []store.Trial
	for i := range n {
		a := space.Assignment{"NCCL_ALGO": []string{"Ring", "Tree"}[i%2], "NCCL_PROTO": []string{"LL", "Simple"}[i/2%2]}
		score := 100.0 + float64(i%3)
		if a["NCCL_PROTO"] == "LL" {
			score /= 2
		}
		t := store.Trial{Number: i, State: store.Complete, Params: a, Env: sp.Env(a), Scores: map[string]float64{}}
		for _, r := range sp.Ranges {
			t.Scores[r.Name] = score
		}
		if logged {
			t.NCCLLog = nccllog.Log{Debug: true, Read: map[string]string{"NCCL_ALGO": a["NCCL_ALGO"], "NCCL_PROTO": a["NCCL_PROTO"]}}
		}
		trials = append(trials, t)
	}
	return trials
}

// TestReportImportanceText: report credits no share where the F-test has
// too few residual degrees of freedom (3 trials: F(1,1)) or where no NCCL
// log confirms the variables (it showed the protocol's share, confirmed, and
// only status warned); it says which.
func TestReportImportanceText(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte(reportSpace))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		trials []store.Trial
		want   string
		shares bool
	}{
		{"logged", reportTrials(sp, 16, true), "PROTO 100%; not significant: ALGO", true},
		{"three trials", reportTrials(sp, 3, true), "too few trials to test: ALGO PROTO", false},
		{"no NCCL log", reportTrials(sp, 16, false), "not confirmed by NCCL's log, left out: ALGO PROTO", false},
	} {
		var out bytes.Buffer
		printImportance(&out, &loaded{space: sp}, results.Importances(sp, tc.trials))
		line := strings.Split(out.String(), "\n")[1]
		if !strings.Contains(line, tc.want) || strings.Contains(line, "%") != tc.shares {
			t.Errorf("%s: %q, want %q and no share", tc.name, line, tc.want)
		}
	}
}

// TestReportImportanceAligned: a range name longer than 8 characters
// pushed its line's importances right of the others'.
func TestReportImportanceAligned(t *testing.T) {
	sp, err := space.Parse("p.toml", []byte(reportSpace+"[[range]]\nname = \"s\"\nmin = \"1K\"\nmax = \"4K\"\n[[range]]\nname = \"large_messages\"\nmin = \"4K\"\nmax = \"2M\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printImportance(&out, &loaded{space: sp}, results.Importances(sp, reportTrials(sp, 16, true)))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")[1:]
	if len(lines) != 2 || strings.Index(lines[0], "PROTO") != strings.Index(lines[1], "PROTO") {
		t.Errorf("columns not aligned:\n%s", out.String())
	}
}

package tuner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/store"
)

// TestCompareChecksEverySetting: compare refuses, before running anything,
// a setting the benchmark would never get (a DDP knob for nccl-tests, which
// was left out in silence, so that "B" measured NCCL's defaults) or one that
// hides NCCL's log, as the space refuses them pinned; and a DDP knob reaches
// the DDP step as its option.
func TestCompareChecksEverySetting(t *testing.T) {
	sp := mustParse(t, "test.toml", roceSpace)
	for _, tc := range []struct {
		name string
		b    []string
		want string
	}{
		{"DDP knob for nccl-tests", []string{"bucket_cap_mb=25"}, `B: bucket_cap_mb is a DDP setting: it needs benchmark.kind = "ddp"`},
		{"NCCL's log hidden", []string{"NCCL_DEBUG=WARN"}, "B: NCCL_DEBUG = WARN would hide the INFO lines"},
		{"NCCL's log sent away", []string{"NCCL_DEBUG_FILE=/tmp/x.%h.%p"}, "B: NCCL_DEBUG_FILE would send NCCL's log where nccltune cannot read it"},
		{"INIT and ENV left out", []string{"NCCL_DEBUG_SUBSYS=COLL"}, "B: NCCL_DEBUG_SUBSYS = COLL must include INIT and ENV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := compareArms(sp, nil, tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("compareArms(B = %v) = %v, want an error with %q", tc.b, err, tc.want)
			}
			// The tuner's entry point refuses it before any launch: there is
			// no simulator to launch here.
			if _, err := (&Tuner{Space: sp}).Compare(context.Background(), tc.b, nil, 2); err == nil || !strings.Contains(err.Error(), strings.Replace(tc.want, "B: ", "A: ", 1)) {
				t.Errorf("Compare(A = %v) = %v, want an error with %q", tc.b, err, tc.want)
			}
		})
	}
	if arms, err := compareArms(sp, []string{"NCCL_PROTO=LL128"}, []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,ENV,COLL"}); err != nil || len(arms) != 2 {
		t.Errorf("compareArms of legal settings: %v, %v", arms, err)
	}

	ddp := mustParse(t, "ddp.toml", fmt.Sprintf(ddpSpace, `kind = "torchrun"`+"\nnproc_per_node = 2", "python3"))
	arms, err := compareArms(ddp, []string{"NCCL_PROTO=Simple"}, []string{"bucket_cap_mb=25", "NCCL_PROTO=LL"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ddp.Args(arms[1].assignment); !slices.Contains(got, "--bucket-cap-mb=25") {
		t.Errorf("B's DDP step options are %v, want --bucket-cap-mb=25 among them", got)
	}
	if got := arms[1].env; !slices.Contains(got, "NCCL_PROTO=LL") || slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "bucket_cap_mb") }) {
		t.Errorf("B's environment is %v, want NCCL_PROTO=LL and no DDP knob", got)
	}
}

// TestCompareOfAnUnmeasuredRange: a range that a complete run did not score
// (nccl-tests measured no size of it above 0 bytes) has no verdict; its
// missing scores were read as 0, and a gain of NaN was reported as "no
// significant difference", with means of 0.
func TestCompareOfAnUnmeasuredRange(t *testing.T) {
	ranges := []space.Range{{Name: "tiny"}, {Name: "large"}}
	var runs []store.ValidationRun
	for round, ab := range [][2]float64{{100, 110}, {101, 112}, {99, 109}} {
		for i, arm := range []string{"A", "B"} {
			runs = append(runs, store.ValidationRun{Round: round, Arm: arm, State: store.Complete, Scores: map[string]float64{"large": ab[i]}})
		}
	}
	res := compareRuns(ranges, runs)
	if tiny := res[0]; !strings.HasPrefix(tiny.Verdict, "no verdict") || !math.IsNaN(tiny.MeanA) || !math.IsNaN(tiny.MeanB) || !math.IsNaN(tiny.Gain) {
		t.Errorf("unmeasured range: %+v, want no verdict and NaN means", tiny)
	}
	if large := res[1]; large.Verdict != "B faster" {
		t.Errorf("measured range: %+v, want B faster", large)
	}
}

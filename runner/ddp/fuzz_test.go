package ddp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzParse: whatever the ranks print, Parse returns an error or a result
// of at least a step of positive time, of a rank inside its world; that
// result, printed again as the script prints it, reads back the same; and
// output without the tag is no result.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"h200-oom.txt", "h200-torchrun-world1.txt"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add(`[1,1]<stdout>:NCCLTUNE_DDP {"rank": 1, "world": 2, "steps": 5, "step_ms_mean": 9.5}NCCLTUNE_DDP {"rank": 0, "world": 2, "steps": 5, "step_ms_mean": 10.5}`)
	f.Add(`NCCLTUNE_DDP {"rank": 0, "world": 1, "steps": 20, "step_ms_mean": 5, "STEP_MS_MEAN": 1e-400}`)
	f.Fuzz(func(t *testing.T, out string) {
		r, err := Parse([]byte(out))
		if !strings.Contains(out, strings.TrimSpace(resultTag)) && err != ErrNoResult {
			t.Fatalf("no tag, yet %+v, %v", r, err)
		}
		if err != nil {
			return
		}
		if r.Steps < 1 || !(r.StepMsMean > 0) || r.World > 0 && (r.Rank < 0 || r.Rank >= r.World) {
			t.Fatalf("result %+v", r)
		}
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse([]byte(resultTag + string(line) + "\n"))
		if err != nil || again != r {
			t.Fatalf("%s read back as %+v, %v", line, again, err)
		}
	})
}

// TestParseScales: the largest output a trial keeps reads in about a second
// however its lines run results and tags together.
func TestParseScales(t *testing.T) {
	if testing.Short() {
		t.Skip("parses large outputs")
	}
	const size = 8 << 20 // runner's maxOutput
	result := `NCCLTUNE_DDP {"rank": 0, "world": 1, "steps": 5, "step_ms_mean": 9.5}`
	for name, out := range map[string]string{
		"results on a line":      strings.Repeat(strings.Repeat(result, 1000)+"\n", size/len(result)/1000),
		"tags on a line":         strings.Repeat(strings.Repeat(resultTag, 1<<20/len(resultTag))+"\n", 8),
		"a tag before each line": strings.Repeat(resultTag+`{"rank": [`+"\n", size/24),
	} {
		start := time.Now()
		Parse([]byte(out))
		// 10x what it takes on a slow machine: a blow-up takes minutes.
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: %d bytes read in %v", name, len(out), d)
		}
	}
}

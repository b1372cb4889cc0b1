package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStoredTextStaysOnItsLine: free text an altered store holds (why the
// campaign stopped, a failure's kind and reason, a verdict's reason, a
// range's name, what NCCL's log said, a trial's environment) is quoted by
// status, show and report on the line that names it, each character that
// is not graphic escaped (text.Clean), as table cells are: a newline in it
// started a line of the store's making.
func TestStoredTextStaysOnItsLine(t *testing.T) {
	commands := [][]string{{"status"}, {"show", "2"}, {"show", "5"}, {"report", "--out", "r"}}
	outputs := readoutsOfAltered(t, commands,
		`UPDATE campaigns SET stopped = 'stopped early' || char(10) || 'FORGED stop',
			space = CAST(replace(CAST(space AS TEXT), 'name = "small"', 'name = "sm\nFORGED range"') AS BLOB)`,
		`UPDATE trials SET scores = replace(scores, '"small":', '"sm\nFORGED range":')`,
		`UPDATE trials SET state = 'failed', failure_kind = 'nccl' || char(10) || 'FORGED kind', failure_reason = 'x' || char(10) || 'FORGED reason' WHERE number = 5`,
		`UPDATE trials SET nccl_log = json_set(nccl_log, '$.version', 'v' || char(10) || 'FORGED version', '$.network', 'IB' || char(10) || 'FORGED network',
			'$.notes', json_array('n' || char(10) || 'FORGED note'), '$.rejected', json_object('NCCL_ALGO', 'r' || char(10) || 'FORGED rejected')),
			env = json_insert(env, '$[#]', 'NCCL_FORGED=1' || char(10) || 'FORGED env') WHERE number = 2`,
		`UPDATE validations SET verdict = 'default', reason = 'kept' || char(10) || 'FORGED verdict'`)
	for i, out := range outputs {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "FORGED") {
				t.Errorf("%v: a line of the store's making: %q\n%s", commands[i], l, out)
			}
		}
	}
}

// readoutsOfAltered puts a small validated campaign in a folder
// (ranCampaign), alters its store by stmts, and returns what each of
// commands then prints (standard output and error), failing t where one
// panics.
func readoutsOfAltered(t *testing.T, commands [][]string, stmts ...string) []string {
	t.Helper()
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "6", "--no-simplify", "--validate-rounds", "2")
	tamper(t, filepath.Join(dir, "nccltune.db"), stmts...)
	var outputs []string
	for _, args := range commands {
		code, out, errOut := nccltune(t, dir, args...)
		if strings.Contains(errOut, "panic") {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		outputs = append(outputs, out+errOut)
	}
	return outputs
}

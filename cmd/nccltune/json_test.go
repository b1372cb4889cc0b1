package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// smallCampaign puts a campaign of 4 trials, unsimplified and unvalidated,
// into a store in a new folder (ranCampaign), which it returns.
func smallCampaign(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "4", "--no-simplify", "--no-validate")
	return dir
}

// TestJSONListsAreNeverNull: a list in --json output is [] where empty,
// never null, which a script iterating it (Python's for, jq's .[]) fails
// on: status's group_spreads of a campaign without groups (every campaign
// of one group), doctor's cluster checks without a space.
func TestJSONListsAreNeverNull(t *testing.T) {
	dir := smallCampaign(t)
	for _, tc := range []struct {
		args []string
		key  string
	}{
		{[]string{"status", "--json"}, "group_spreads"},
		{[]string{"report", "--json", "--out", "plots"}, "group_spreads"},
		{[]string{"doctor", "--json", "--python", ""}, "cluster"},
	} {
		_, out, errOut := nccltune(t, dir, tc.args...)
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("nccltune %v: %v\n%s%s", tc.args, err, out, errOut)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(got[tc.key], &list); err != nil || list == nil {
			t.Errorf("nccltune %v: %s is %s, want a list", tc.args, tc.key, got[tc.key])
		}
	}
}

// TestShowJSONOfAFailedTrial: show --json gives a trial's lists and maps
// as [] and {} where it has none (a failed trial's rows and scores, the
// nodes of a campaign of one group), never null; and with --output the
// captured output as text, which it gave as base64.
func TestShowJSONOfAFailedTrial(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "broken", 3, "echo 'NCCL WARN broken'\nexit 3\n")
	nccltune(t, dir, "run", "-q", "--space", spaceFile)
	show := func(args ...string) map[string]json.RawMessage {
		code, out, errOut := nccltune(t, dir, append([]string{"show", "--json"}, args...)...)
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("show --json %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
		}
		return got
	}
	got := show("0")
	for _, key := range []string{"Params", "Env", "Command", "Scores", "Rows", "Nodes"} {
		if string(got[key]) == "null" {
			t.Errorf("show --json of a failed trial: %s is null", key)
		}
	}
	if out, ok := got["Output"]; ok {
		t.Errorf("show --json without --output gives Output %s", out)
	}
	var output string
	if err := json.Unmarshal(show("--output", "0")["Output"], &output); err != nil || output != "NCCL WARN broken\n" {
		t.Errorf("show --json --output: Output %q (%v), want the benchmark's output as text", output, err)
	}
}

// TestDoctorJSONTimesTheNode: doctor --json without a space gives the
// node's time, as with one; it gave 0 (1970).
func TestDoctorJSONTimesTheNode(t *testing.T) {
	_, out, errOut := nccltune(t, t.TempDir(), "doctor", "--json", "--python", "")
	var rep struct {
		Nodes []struct {
			Time int64 `json:"unix_nano"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Nodes) != 1 || rep.Nodes[0].Time < time.Now().Add(-time.Hour).UnixNano() {
		t.Errorf("doctor --json: %v\n%s%s", err, out, errOut)
	}
}

// TestJSONEnvIsNeverNull: a range's env in status and report --json is {}
// where NCCL's defaults stand and no trial holds them (their trials
// failed), as export --format json writes it, never null, which a script
// reading its keys fails on.
func TestJSONEnvIsNeverNull(t *testing.T) {
	dir := untriedDefaults(t)
	for _, args := range [][]string{{"status", "--json"}, {"report", "--json", "--out", "plots"}} {
		code, out, errOut := nccltune(t, dir, args...)
		var got struct{ Ranges []map[string]json.RawMessage }
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Ranges) != 1 {
			t.Fatalf("nccltune %v: exit %d, %v\n%s%s", args, code, err, out, errOut)
		}
		if env := string(got.Ranges[0]["env"]); env != "{}" {
			t.Errorf("nccltune %v: env is %s, want {}", args, env)
		}
	}
}

// TestJSONEscapesControlCharacters: --json quoted a benchmark's output (and
// its failure, a store's text) as encoding/json writes them, C1 (a terminal's CSI, U+009B) and
// a bidirectional override raw, which a script printing the text hands to
// the terminal; they are escaped, and the text decodes as it was.
func TestJSONEscapesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	spaceFile := scriptSpace(t, dir, "hostile", 3, "printf 'NCCL WARN \\302\\2332J \\342\\200\\256gnp.exe\\n'\nexit 3\n")
	nccltune(t, dir, "run", "-q", "--space", spaceFile)
	code, out, errOut := nccltune(t, dir, "show", "--json", "--output", "0")
	if strings.ContainsFunc(out, func(r rune) bool { return !unicode.IsGraphic(r) && r != '\n' }) || !strings.Contains(out, `\u009b2J \u202egnp.exe`) {
		t.Errorf("show --json: exit %d, a character that is not graphic raw, or not escaped:\n%q%s", code, out, errOut)
	}
	var got struct{ Output string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Output != "NCCL WARN \u009b2J \u202egnp.exe\n" {
		t.Errorf("show --json --output: Output %q (%v), want the output as it was", got.Output, err)
	}
}

// TestJSONKeysAreAlwaysThere: a key the README documents is in every
// object that it documents it for, "" or [] where it holds nothing: a
// script reading it (Python's r["fix"]) failed where it was left out,
// doctor's fix of a check that passed, an importance's with of a parameter
// not aliased, and nccl-tuned.json's left_out of an export that left out
// nothing.
func TestJSONKeysAreAlwaysThere(t *testing.T) {
	dir := smallCampaign(t)
	decode := func(what, data string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(data), v); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, data)
		}
	}
	has := func(what string, obj map[string]json.RawMessage, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s: no key %s, only %v", what, k, slices.Sorted(maps.Keys(obj)))
			}
		}
	}
	_, out, _ := nccltune(t, dir, "doctor", "--json", "--python", "")
	var doc struct {
		Nodes []struct{ Results []map[string]json.RawMessage }
	}
	decode("doctor --json", out, &doc)
	for _, r := range doc.Nodes[0].Results {
		has("doctor --json's result", r, "layer", "check", "status", "detail", "fix")
	}
	_, out, _ = nccltune(t, dir, "report", "--json", "--out", "plots")
	var rep struct {
		Importance map[string]struct{ Params []map[string]json.RawMessage }
	}
	decode("report --json", out, &rep)
	for _, imp := range rep.Importance {
		for _, p := range imp.Params {
			has("report --json's importance", p, "param", "status", "share", "p", "with")
		}
	}
	if code, out, errOut := nccltune(t, dir, "export", "--format", "json", "--out", "x"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "x", "nccl-tuned.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tuned map[string]json.RawMessage
	decode("nccl-tuned.json", string(data), &tuned)
	if got := string(tuned["left_out"]); got != "[]" {
		t.Errorf("nccl-tuned.json's left_out of an export that left out nothing: %q, want []", got)
	}
}

// TestJSONKeysAreDocumented: every key status --json, report --json and
// nccl-tuned.json hold is named in the README (`key`, or "key" in a JSON sketch), for a
// script to rely on; most of
// status's (a range's default, best, search_gain, tuned, ...) were named
// nowhere. The keys of maps keyed by data (a range's env, the trials'
// by_state, report's importance by range) are data, not names.
func TestJSONKeysAreDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ranCampaign(t, dir, "-q", "--trials", "6", "--no-simplify", "--validate-rounds", "2")
	data := map[string]bool{"env": true, "settled": true, "by_state": true, "failures": true, "unconfirmed": true, "inherited": true, "importance": true, "plots": true}
	undocumented := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if !strings.Contains(string(readme), "`"+k+"`") && !strings.Contains(string(readme), `"`+k+`"`) {
					undocumented[k] = true
				}
				if m, ok := x.(map[string]any); ok && data[k] {
					for _, y := range m {
						walk(y)
					}
				} else {
					walk(x)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, args := range [][]string{{"status", "--json"}, {"report", "--json", "--out", "plots"}} {
		code, out, errOut := nccltune(t, dir, args...)
		var doc any
		if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
			t.Fatalf("nccltune %v: exit %d, %v\n%s", args, code, err, errOut)
		}
		walk(doc)
	}
	if code, out, errOut := nccltune(t, dir, "export", "--format", "json", "--out", "x"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	tuned, err := os.ReadFile(filepath.Join(dir, "x", "nccl-tuned.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(tuned, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	if len(undocumented) > 0 {
		t.Errorf("keys the README does not name: %v", slices.Sorted(maps.Keys(undocumented)))
	}
}

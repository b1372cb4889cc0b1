package main

import (
	"regexp"
	"testing"
)

// TestAbsurdStoredNumbersKeepTheirWidth: scores, measurements and
// validation gains an altered store holds (1e300, a denormal), which the
// store's checks pass as finite and not negative, print in bounded width in
// every table and line of status, show and report: %f wrote each of their
// some 300 digits.
func TestAbsurdStoredNumbersKeepTheirWidth(t *testing.T) {
	commands := [][]string{{"status"}, {"show", "2"}, {"show", "0"}, {"report", "--out", "r"}}
	outputs := readoutsOfAltered(t, commands,
		`UPDATE trials SET scores = json_set(scores, '$.small', 1e300) WHERE number >= 2`,
		`UPDATE results SET oop_time_us = 1e300, oop_algbw = 4.9e-324, oop_busbw = 1e300, ip_time_us = 1e300, ip_busbw = 1e300`,
		`UPDATE validations SET gain = 1e300, ci_low = -1e300, ci_high = 1e300, default_mean = 1e300, tuned_mean = 4.9e-324`)
	long := regexp.MustCompile(`[0-9]{20,}`)
	for i, out := range outputs {
		if m := long.FindString(out); m != "" {
			t.Errorf("%v: a number of %d digits:\n%s", commands[i], len(m), out)
		}
	}
}

package main

import (
	"testing"

	"github.com/nccltune/nccltune/runner/nccltests"
)

// TestWrongColumn: show prints an unchecked #wrong as nccl-tests does (N/A:
// alltoall's and sendrecv's in-place half), not as the -1 it is stored as.
func TestWrongColumn(t *testing.T) {
	for wrongs, want := range map[int64]string{-1: "N/A", 0: "0", 3: "3"} {
		if got := wrong(nccltests.Measure{Wrong: wrongs}); got != want {
			t.Errorf("%d wrong: %q, want %q", wrongs, got, want)
		}
	}
}

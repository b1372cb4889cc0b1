// Package examples embeds the ready-made space files, so that `nccltune run`
// without --space has a campaign to run: the simulated two-node IB cluster.
package examples

import "embed"

// Files holds every example space file.
//
//go:embed *.toml
var Files embed.FS

// Default is the space `nccltune run` uses when none is given.
const Default = "sim-2node-ib.toml"

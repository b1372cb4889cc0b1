package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/nccltune/nccltune/space"
	"github.com/nccltune/nccltune/tuner"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "re-measure each range's chosen settings against NCCL's defaults, with a confidence interval",
		Description: "Runs the chosen configuration of every range and NCCL's defaults interleaved (A B, B A, ...)\n" +
			"for --rounds rounds. A range keeps its tuned settings only if every run was correct, NCCL's\n" +
			"log confirmed each variable, and the 95% confidence interval of the gain lies above zero.\n" +
			"`run` does this by itself once the budget is spent, unless --no-validate.",
		Flags: []cli.Flag{storeFlag, campaignFlag, ownSpaceFlag,
			&cli.IntFlag{Name: "rounds", Value: tuner.DefaultRounds, Usage: fmt.Sprintf("interleaved rounds (2 to %d)", tuner.MaxRounds)},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress output"}},
		Action: func(c *cli.Context) error {
			if err := tuner.CheckRounds(c.Int("rounds")); err != nil {
				return usageError{fmt.Errorf("--rounds: %w", err)}
			}
			st, l, err := openCampaignWith(c, openExistingWriter, space.Parse)
			if err != nil {
				return err
			}
			defer st.Close()
			sp, err := ownSpace(c, l)
			if err != nil {
				return err
			}
			if l.camp.Scale > 0 {
				sp = sp.AtScale(l.camp.Scale)
			}
			sp.Campaign.Name = l.camp.Name // NAME-2 of run --allow-space-change runs a space named NAME
			tu := &tuner.Tuner{Space: sp, Store: st}
			if !c.Bool("quiet") {
				tu.OnValidationRun = newProgressLog(os.Stderr, sp).validation
			}
			if _, err := tu.Validate(c.Context, c.Int("rounds")); err != nil {
				return goesOn(err, c, "validate")
			}
			return printStatus(os.Stdout, st, l.camp.Name)
		},
	}
}

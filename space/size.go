package space

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// sizeUnits are binary multiples, as nccl-tests reads -b/-e ("64K" is 65536 bytes).
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}

// sizeRE is a byte count and its unit: K, M, G or T, each alone or with
// "B" or "iB" ("4M", "4MB", "4MiB"), or "B" alone; case and the spaces
// around the unit do not matter. Anything else ("8I", "+8", "1.5M") is
// refused rather than read as a size the user did not mean.
var sizeRE = regexp.MustCompile(`^(?i)\s*(\d+)\s*(?:([KMGT])(?:I?B)?|B)?\s*$`)

// ParseSize reads a byte count such as "8", "64K", "1M", "8G" or "4MiB".
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	var n int64
	var err error
	if m != nil {
		n, err = strconv.ParseInt(m[1], 10, 64)
	}
	if m == nil || err != nil {
		return 0, fmt.Errorf("invalid size %q (want a byte count such as 8, 64K, 1M, 8G)", s)
	}
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.EqualFold(m[2], u.suffix) {
			mult = u.mult
		}
	}
	if n > 0 && n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// legacySize is ParseSize before 6b9e11d, which read a "B", then an "I",
// off the end and a leading '+' ("64Ki", "8I", "+8"): a stored space may
// hold such a size, which its campaign's trials measured; 0 where that
// reading failed too.
func legacySize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 || n > 0 && n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}

// Bounds are range r's sizes as people read them: its first and the end
// it stops short of; or, for the whole sweep of a space without ranges,
// whose end is one byte past the sweep's largest size (a number of no
// meaning), its first and that largest, inclusive; or, for a workload's
// range, whose bounds are all sizes, its calls' smallest and largest,
// inclusive.
func (s *Space) Bounds(r Range) (lo, hi string, inclusive bool) {
	if len(r.Calls) > 0 {
		small, large := r.Calls[0].Bytes, r.Calls[0].Bytes
		for _, c := range r.Calls {
			small, large = min(small, c.Bytes), max(large, c.Bytes)
		}
		return FormatSize(small), FormatSize(large), true
	}
	if r.Max == s.Sizes.Max+1 {
		return FormatSize(r.Min), FormatSize(s.Sizes.Max), true
	}
	return FormatSize(r.Min), FormatSize(r.Max), false
}

// FormatSize writes a byte count in the shortest exact binary unit: 65536 is "64K".
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

package space

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits are binary multiples, as nccl-tests reads -b/-e ("64K" is 65536 bytes).
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}

// ParseSize reads a byte count such as "8", "64K", "1M", "8G" or "4MiB".
func ParseSize(s string) (int64, error) {
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
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (want a byte count such as 8, 64K, 1M, 8G)", s)
	}
	if n > 0 && n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
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

package text

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ErrNotDecimal means a text is not a number as printf writes one.
var ErrNotDecimal = errors.New("not a decimal number as printf writes one")

// decimalRE is a number as C's printf ("%g", "%.2f", "%e"), Python's
// print and Go's fmt write one in decimal: a sign, digits with or without
// a fraction, or a fraction alone, then an exponent.
var decimalRE = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// Decimal reads s as a finite decimal number. It is the one rule for every
// number read from a benchmark's output: strconv.ParseFloat also reads Go's
// own forms, which no printf writes ("0x1p3", "1_000"), and "Inf" and
// "NaN", which are no measurement; those are ErrNotDecimal. A number
// float64 cannot hold is an error too (strconv.ErrRange), "1e-400" as
// "1e400": read as 0, it would not be the number written.
func Decimal(s string) (float64, error) {
	if !decimalRE.MatchString(s) {
		return 0, fmt.Errorf("%q: %w", s, ErrNotDecimal)
	}
	v, err := strconv.ParseFloat(s, 64)
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	if err != nil || math.IsInf(v, 0) || v == 0 && strings.ContainsAny(mantissa, "123456789") {
		return 0, fmt.Errorf("%q: beyond a float64's range: %w", s, strconv.ErrRange)
	}
	return v, nil
}

// Integer reads s as an integer written in decimal, as a space file's
// integers are: Go's flag package reads a leading 0 as octal and 0x as
// hexadecimal. One past int64 is out of range, with the range: it is
// decimal, which "not a decimal integer" would deny.
func Integer(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("out of range (%d to %d)", math.MinInt64, math.MaxInt64)
	case err != nil:
		return 0, errors.New("not a decimal integer")
	}
	return n, nil
}

// Member is one member of a JSON object: its key, decoded, and its value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// JSONMembers reads data, one JSON object and nothing else but white
// space, into its members in order, each key as often as it is given: to
// encoding/json a key given twice has its last value, silently, where a
// benchmark's output given twice is ambiguous.
func JSONMembers(data []byte) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var members []Member
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		members = append(members, Member{key.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, errors.New("text after the JSON object")
	}
	return members, nil
}

// Bounded is a number that fmt writes in bounded width: with %f or %F, one
// of 1e9 or more in magnitude is written as %e writes it, with the same
// flags and precision, and every other verb as for a float64. %f writes
// every digit before the point, some 300 of them for a number an altered
// store may hold (1e300, which no check refuses: it is finite and not
// negative), and the tables it fills broke.
type Bounded float64

// maxFixed is the magnitude from which Bounded writes %f as %e: ten
// digits, more than any measurement's in its unit.
const maxFixed = 1e9

// Format implements fmt.Formatter.
func (b Bounded) Format(f fmt.State, verb rune) {
	if (verb == 'f' || verb == 'F') && math.Abs(float64(b)) >= maxFixed {
		verb = 'e'
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), float64(b))
}

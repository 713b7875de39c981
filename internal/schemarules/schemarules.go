// Package schemarules holds the checks of the job schema's cross-field rules
// (its x-after and x-maxItemsInAll extensions) that the generated validator
// (gen/jobv1/rules.gen.go) calls. conformance/node/check.js implements the
// same rules for producers in JavaScript (docs/wire.md, "The checks every
// producer must add").
package schemarules

import "strings"

// instant is an RFC 3339 date-time as a count of seconds from 0000-03-01
// UTC (proleptic Gregorian) and the digits of its fraction of a second,
// without trailing zeros.
type instant struct {
	sec  int64
	frac string
}

// CompareInstants compares the instants of two RFC 3339 date-times
// (section 5.6: yyyy-mm-ddThh:mm:ss[.frac](Z|+hh:mm|-hh:mm), T and Z in
// either case) exactly, whatever the count of fraction digits: -1 when a is
// before b, 0 when they are the same instant, +1 when a is after b. A leap
// second (ss = 60) counts as the first second of the next minute. ok is
// false when either is not of that form; the schema's format keyword
// reports that.
func CompareInstants(a, b string) (cmp int, ok bool) {
	x, ok1 := parse(a)
	y, ok2 := parse(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch {
	case x.sec < y.sec:
		return -1, true
	case x.sec > y.sec:
		return 1, true
	}
	// Same second: compare the fractions digit by digit, the shorter one
	// padded with zeros.
	n := max(len(x.frac), len(y.frac))
	fx := x.frac + strings.Repeat("0", n-len(x.frac))
	fy := y.frac + strings.Repeat("0", n-len(y.frac))
	return strings.Compare(fx, fy), true
}

func digits(s string, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parse reads s, refusing what does not name an instant.
func parse(s string) (instant, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return instant{}, false
	}
	var f [6]int // year, month, day, hour, minute, second
	for i, at := range [6][2]int{{0, 4}, {5, 2}, {8, 2}, {11, 2}, {14, 2}, {17, 2}} {
		v, ok := digits(s[at[0]:], at[1])
		if !ok {
			return instant{}, false
		}
		f[i] = v
	}
	y, mo, d, h, mi, se := f[0], f[1], f[2], f[3], f[4], f[5]
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || se > 60 {
		return instant{}, false
	}
	frac, rest, ok := fraction(s[19:])
	if !ok {
		return instant{}, false
	}
	offset, ok := zone(rest)
	if !ok {
		return instant{}, false
	}
	sec := days(y, mo, d)*86400 + int64(h*3600+mi*60+se) - int64(offset)
	return instant{sec: sec, frac: frac}, true
}

// fraction reads the fraction of a second at the start of rest, if any:
// its digits without trailing zeros, and what follows it.
func fraction(rest string) (frac, after string, ok bool) {
	if !strings.HasPrefix(rest, ".") {
		return "", rest, true
	}
	i := 1
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 1 {
		return "", "", false
	}
	return strings.TrimRight(rest[1:i], "0"), rest[i:], true
}

// zone reads the offset Z, +hh:mm or -hh:mm, in seconds east of UTC.
func zone(rest string) (int, bool) {
	if rest == "Z" || rest == "z" {
		return 0, true
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return 0, false
	}
	oh, ok1 := digits(rest[1:], 2)
	om, ok2 := digits(rest[4:], 2)
	if !ok1 || !ok2 || oh > 23 || om > 59 {
		return 0, false
	}
	offset := oh*3600 + om*60
	if rest[0] == '-' {
		offset = -offset
	}
	return offset, true
}

func leap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if leap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// days counts the days from 0000-03-01 to y-m-d (H. Hinnant's
// days_from_civil, shifted: every count here is of years 0 to 9999).
func days(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := (y + 400) / 400 // y >= -1
	yoe := y + 400 - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe)
}

// CountItems returns how many items the arrays among the named properties
// of obj hold in all; a property that is absent or not an array counts 0.
func CountItems(obj map[string]any, names ...string) int {
	n := 0
	for _, name := range names {
		if a, ok := obj[name].([]any); ok {
			n += len(a)
		}
	}
	return n
}

package main

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/alexify/mailer/internal/schemafast"
)

// classPatterns are patterns classOf takes, and ones it must leave to the
// regular expression.
var classPatterns = []struct {
	pattern string
	takes   bool
}{
	{`^[0-9a-f]{64}$`, true},
	{`^[^\x00-\x1f\x7f]+$`, true},
	{`^[A-Za-z0-9._:-]+$`, true},
	{`^[A-Za-z0-9_-]{43}$`, true},
	{`^[^\r\n]*$`, true},
	{`^[^\x00-\x08\x0a-\x1f\x7f]*$`, true},
	{`^[!-9;-~]{1,76}$`, true},
	{`^[^\r\n/\\]+$`, true},
	{`^[^é]*$`, false}, // a class deciding characters beyond ASCII
	{`^[a-z]+@[a-z]+$`, false},
	{`[a-z]+`, false}, // not anchored
	{`^<[^<>@\s"]+@[^<>@\s"]+>$`, false},
}

// TestClassOfAgreesWithRegexp checks that schemafast.Repeat decides every
// pattern classOf takes exactly as package regexp does, on strings of
// ASCII, characters beyond it and bytes that are not UTF-8.
func TestClassOfAgreesWithRegexp(t *testing.T) {
	alphabet := []string{"a", "Z", "0", "9", "f", "g", ".", "-", "_", ":", ";", "/", "\\", " ", "\t", "\r", "\n", "\x00", "\x07", "\x7f", "~", "!", "é", "€", "😀", "\xff", "\xc3"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range classPatterns {
		cls, least, most, ok := classOf(tc.pattern)
		if ok != tc.takes {
			t.Errorf("classOf(%q) takes it: %t, want %t", tc.pattern, ok, tc.takes)
			continue
		}
		if !ok {
			continue
		}
		re := regexp.MustCompile(tc.pattern)
		for i := 0; i < 20000; i++ {
			n := rng.IntN(80)
			if rng.IntN(4) == 0 {
				n = rng.IntN(3) + 42 // around {43} and {64}
			}
			s := ""
			for j := 0; j < n; j++ {
				s += alphabet[rng.IntN(len(alphabet))]
			}
			if got, want := schemafast.Repeat(s, &cls, least, most), re.MatchString(s); got != want {
				t.Fatalf("%q on %q: Repeat %t, regexp %t", tc.pattern, s, got, want)
			}
		}
	}
}

// FuzzClassOf checks the same on any string.
func FuzzClassOf(f *testing.F) {
	f.Add("abc", uint8(0))
	f.Add("a\r\nb", uint8(4))
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		tc := classPatterns[int(which)%len(classPatterns)]
		cls, least, most, ok := classOf(tc.pattern)
		if !ok {
			return
		}
		if got, want := schemafast.Repeat(s, &cls, least, most), regexp.MustCompile(tc.pattern).MatchString(s); got != want {
			t.Fatalf("%q on %q: Repeat %t, regexp %t", tc.pattern, s, got, want)
		}
	})
}

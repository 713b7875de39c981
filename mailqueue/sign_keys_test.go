package mailqueue

import (
	"strings"
	"testing"
)

func TestCheckSigningKeys(t *testing.T) {
	good := func(id string) SigningKey { return SigningKey{ID: id, Secret: []byte(strings.Repeat("k", 32))} }
	bad := map[string][]SigningKey{
		"a secret of 31 bytes": {{ID: "k1", Secret: make([]byte, 31)}},
		"no secret":            {{ID: "k1"}},
		"no ID":                {{Secret: make([]byte, 32)}},
		"two IDs alike":        {good("k1"), good("k1")},
		"an ID with a space":   {{ID: "k 1", Secret: make([]byte, 32)}},
		"an ID of 65 bytes":    {{ID: strings.Repeat("k", 65), Secret: make([]byte, 32)}},
		"a bad second key":     {good("k2"), {ID: "k1", Secret: []byte("short")}},
	}
	for name, keys := range bad {
		if checkSigningKeys(keys) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, keys := range map[string][]SigningKey{"none": nil, "one": {good("2026-10")}, "two": {good("2026-10"), good("2026.04:a_b-c")}} {
		if err := checkSigningKeys(keys); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

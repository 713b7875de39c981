package sign_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/alexify/mailer/internal/sign"
)

var secret = []byte(strings.Repeat("k", 32))

// macText is the mac written out by hand: the HMAC-SHA256 of text, unpadded
// base64url.
func macText(text string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(text))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func TestMACIsOverTheCanonicalJSONWithoutTheMAC(t *testing.T) {
	job := map[string]any{"v": json.Number("1"), "kid": "k1", "hash": "h", "mac": "anything"}
	got, err := sign.MAC(secret, job)
	if want := macText(`{"hash":"h","kid":"k1","v":1}`); err != nil || got != want {
		t.Errorf("MAC = %s, %v; want %s", got, err, want)
	}
	if job["mac"] != "anything" {
		t.Error("MAC changed the job")
	}
}

func TestSignThenVerify(t *testing.T) {
	job := map[string]any{"v": json.Number("1"), "hash": "h"}
	if err := sign.Sign("k1", secret, job); err != nil {
		t.Fatal(err)
	}
	if job["kid"] != "k1" || job["mac"] != macText(`{"hash":"h","kid":"k1","v":1}`) {
		t.Fatalf("signed job: %v", job)
	}
	if !sign.Verify(secret, job) {
		t.Error("a signed job does not verify")
	}
	other := []byte(strings.Repeat("o", 32))
	if sign.Verify(other, job) {
		t.Error("a job verifies under another secret")
	}
	for name, edit := range map[string]func(m map[string]any){
		"a field changed":       func(m map[string]any) { m["hash"] = "x" },
		"the kid changed":       func(m map[string]any) { m["kid"] = "k2" },
		"no mac":                func(m map[string]any) { delete(m, "mac") },
		"a mac not a string":    func(m map[string]any) { m["mac"] = json.Number("1") },
		"an empty mac":          func(m map[string]any) { m["mac"] = "" },
		"the mac padded":        func(m map[string]any) { m["mac"] = m["mac"].(string) + "=" },
		"no canonical JSON":     func(m map[string]any) { m["n"] = math.NaN() },
		"a field added":         func(m map[string]any) { m["x"] = true },
		"the mac in upper case": func(m map[string]any) { m["mac"] = strings.ToUpper(m["mac"].(string)) },
	} {
		m := map[string]any{}
		for k, v := range job {
			m[k] = v
		}
		edit(m)
		if sign.Verify(secret, m) {
			t.Errorf("%s: verifies", name)
		}
	}
}

func TestSignFailsWithoutCanonicalJSON(t *testing.T) {
	job := map[string]any{"n": math.Inf(1)}
	if err := sign.Sign("k1", secret, job); err == nil {
		t.Fatal("signed a job with no canonical JSON")
	}
	if _, ok := job["mac"]; ok {
		t.Error("a mac was set")
	}
}

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

var at = sign.Binding{Namespace: "mail", Queue: "mailer:mail", ID: "id-1"}

// input is the mac input of a job whose JCS is obj, stored at at.
func input(obj string) string {
	return `["mailer/mac","mail","mailer:mail","id-1",` + obj + `]`
}

// macText is the mac written out by hand: the HMAC-SHA256 of text, unpadded
// base64url.
func macText(text string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(text))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func TestMACIsOverTheCanonicalJSONWithoutTheMAC(t *testing.T) {
	job := map[string]any{"v": json.Number("1"), "kid": "k1", "hash": "h", "mac": "anything"}
	got, err := sign.MAC(secret, at, job)
	if want := macText(input(`{"hash":"h","kid":"k1","v":1}`)); err != nil || got != want {
		t.Errorf("MAC = %s, %v; want %s", got, err, want)
	}
	if job["mac"] != "anything" {
		t.Error("MAC changed the job")
	}
}

func TestSignThenVerify(t *testing.T) {
	job := map[string]any{"v": json.Number("1"), "hash": "h"}
	if err := sign.Sign("k1", secret, at, job); err != nil {
		t.Fatal(err)
	}
	if job["kid"] != "k1" || job["mac"] != macText(input(`{"hash":"h","kid":"k1","v":1}`)) {
		t.Fatalf("signed job: %v", job)
	}
	if !sign.Verify(secret, at, job) {
		t.Error("a signed job does not verify")
	}
	other := []byte(strings.Repeat("o", 32))
	if sign.Verify(other, at, job) {
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
		if sign.Verify(secret, at, m) {
			t.Errorf("%s: verifies", name)
		}
	}
}

func TestSignFailsWithoutCanonicalJSON(t *testing.T) {
	job := map[string]any{"n": math.Inf(1)}
	if err := sign.Sign("k1", secret, at, job); err == nil {
		t.Fatal("signed a job with no canonical JSON")
	}
	if _, ok := job["mac"]; ok {
		t.Error("a mac was set")
	}
}

// TestMACBindsWhereTheJobIsStored: the same job verifies only under the
// namespace, queue and id it was signed for.
func TestMACBindsWhereTheJobIsStored(t *testing.T) {
	job := map[string]any{"v": json.Number("1"), "hash": "h"}
	if err := sign.Sign("k1", secret, at, job); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]sign.Binding{
		"another id":        {Namespace: at.Namespace, Queue: at.Queue, ID: "id-2"},
		"another queue":     {Namespace: at.Namespace, Queue: "mailer:other", ID: at.ID},
		"another namespace": {Namespace: "billing", Queue: at.Queue, ID: at.ID},
		// The parts are JSON strings in an array: no shift of text from one
		// part to the next makes the same input.
		"text shifted between parts": {Namespace: at.Namespace + `","`, Queue: at.Queue, ID: at.ID},
		"no binding":                 {},
	} {
		if sign.Verify(secret, b, job) {
			t.Errorf("%s: verifies", name)
		}
	}
	ad, err := sign.AD(at)
	if err != nil || string(ad) != `["mailer/enc","mail","mailer:mail","id-1"]` {
		t.Errorf("AD = %s, %v", ad, err)
	}
	if _, err := sign.AD(sign.Binding{ID: "\xff"}); err == nil {
		t.Error("AD of invalid UTF-8: no error")
	}
}

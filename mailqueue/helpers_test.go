package mailqueue_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"

	gosmtp "github.com/emersion/go-smtp"
)

type gosmtpError = gosmtp.SMTPError

func base64Reader(b []byte) io.Reader {
	return base64.NewDecoder(base64.StdEncoding, bytes.NewReader(bytes.Join(bytes.Fields(b), nil)))
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

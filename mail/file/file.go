// Package file is a mail.Transport for development: it writes each message
// as an .eml file into a folder, where a mail client can open it.
package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/alexify/mailer/mail"
)

// Transport writes each message to <Dir>/<sanitized Message-ID>.eml. It is
// safe for concurrent use.
type Transport struct {
	dir string
}

var _ mail.Transport = (*Transport)(nil)

// New returns a Transport writing into dir, which it creates (with its
// parents, mode 0750) when missing. It fails when dir is empty or cannot be
// created.
func New(dir string) (*Transport, error) {
	if dir == "" {
		return nil, errors.New("file: empty folder")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	return &Transport{dir: dir}, nil
}

// Name returns the file name of a message: its Message-ID without the angle
// brackets, each character other than a letter, a digit, '.', '-', '_', '+'
// or '@' replaced by '_', and ".eml".
func Name(messageID string) string {
	id := strings.TrimSuffix(strings.TrimPrefix(messageID, "<"), ">")
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '.', r == '-', r == '_', r == '+', r == '@':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return strings.TrimLeft(b.String(), ".") + ".eml"
}

// Send writes the message's bytes (mail.Message.Bytes) to its file, through
// a temporary file renamed into place, so a reader never sees half a
// message; a message sent again replaces its file. It answers Accepted with
// ProviderID the file's name; Validation for a message that does not build
// (mail.ErrInvalidMessage); Configuration when the folder is not writable;
// Retryable for another failure to write or a context already done.
func (t *Transport) Send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return fail(mail.Retryable, "cancelled", err)
	}
	data, err := msg.Bytes()
	if err != nil {
		return fail(mail.Validation, err.Error(), err)
	}
	name := Name(msg.MessageID)
	if err := t.write(name, data); err != nil {
		cat := mail.Retryable
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			cat = mail.Configuration
		}
		return fail(cat, "writing the file failed", err)
	}
	return mail.Receipt{Category: mail.Accepted, ProviderID: name}, nil
}

func (t *Transport) write(name string, data []byte) error {
	f, err := os.CreateTemp(t.dir, ".tmp-*.eml")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(t.dir, name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

func fail(cat mail.Category, reason string, cause error) (mail.Receipt, error) {
	r := mail.Receipt{Category: cat, Reason: reason}
	return r, &mail.Error{Receipt: r, Err: cause}
}

// Package attachments holds the example files a job may attach by reference
// ({ref}), which the demo (cmd/mailq demo) resolves with
// github.com/alexify/mailer/attachments.FromPath from this folder:
//
//	terms.pdf   a one-page PDF, the terms of the demo's welcome mail
//
// FS holds the same files, for a program that runs where the folder is not
// (the demo copies them into a temporary folder then).
package attachments

import "embed"

// FS holds every example attachment at its root.
//
//go:embed terms.pdf
var FS embed.FS

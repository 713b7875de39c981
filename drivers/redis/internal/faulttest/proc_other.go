//go:build !linux

package faulttest

import "os/exec"

// DieWithParent does nothing outside Linux, which alone has a parent-death
// signal; a worker child watches its parent itself (ExitWithParent).
func DieWithParent(cmd *exec.Cmd) {}

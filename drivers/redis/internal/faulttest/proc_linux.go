package faulttest

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd's process when the test process
// dies (a test binary killed at its -timeout runs no cleanup), so that no
// server or worker outlives its test.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
